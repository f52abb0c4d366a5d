import { createHash } from 'node:crypto'

// File names are ASCII lowercase only, so two keys never collide on a case-insensitive
// filesystem (macOS, Windows), and never contain '/', '\\', '.' runs or reserved device names.
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'
const MAX_ENCODED = 200 // well under the usual 255-byte name limit, leaving room for '.tmp'
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * The file name for `key`: `k` + lowercase RFC 4648 base32 of its UTF-8 bytes when that is short
 * enough, else `h` + SHA-256 (hex) of its UTF-16 code units. Keys with lone surrogates also take
 * the hashed form, because UTF-8 cannot represent them and two keys would share one name.
 * Hashed files are identified at open by the key stored inside them.
 */
export function fileName(key: string): string {
  if (!LONE_SURROGATE.test(key)) {
    const encoded = base32(Buffer.from(key, 'utf8'))
    if (encoded.length < MAX_ENCODED) return `k${encoded}`
  }
  return `h${createHash('sha256').update(Buffer.from(key, 'utf16le')).digest('hex')}`
}

/** The key a `k…` name encodes, or `undefined` when the name is not one this module makes. */
export function keyFromName(name: string): string | undefined {
  if (!name.startsWith('k')) return undefined
  const bytes = unbase32(name.slice(1))
  if (bytes === undefined) return undefined
  const key = bytes.toString('utf8')
  return fileName(key) === name ? key : undefined
}

function base32(bytes: Uint8Array): string {
  let out = ''
  let bits = 0
  let acc = 0
  for (const byte of bytes) {
    acc = (acc << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(acc >>> (bits - 5)) & 31]
      bits -= 5
    }
    acc &= (1 << bits) - 1
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31]
  return out
}

function unbase32(text: string): Buffer | undefined {
  const out: number[] = []
  let bits = 0
  let acc = 0
  for (const char of text) {
    const v = ALPHABET.indexOf(char)
    if (v < 0) return undefined
    acc = (acc << 5) | v
    bits += 5
    if (bits >= 8) {
      out.push((acc >>> (bits - 8)) & 255)
      bits -= 8
    }
    acc &= (1 << bits) - 1
  }
  return Buffer.from(out)
}

/**
 * Whether a key holds a secret: it starts with one of `prefixes`, or has one right after a `/`
 * (the same key under a `namespacedStorage` prefix, `agents/alice/keys/self/…`).
 */
export function privateKeyTest(prefixes: readonly string[]): (key: string) => boolean {
  const inner = prefixes.map((p) => `/${p}`)
  return (key) => prefixes.some((p) => key.startsWith(p)) || inner.some((p) => key.includes(p))
}
