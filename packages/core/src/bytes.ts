/** Byte helpers shared by every platform: no `Buffer`, no `node:` imports. */
import { AgentMsgError, invalidFormat } from './errors.js'

const encoder = new TextEncoder()
// `fatal`: PROFILE §1 refuses invalid UTF-8, where the default would substitute U+FFFD.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** UTF-8 bytes of `text` (lone surrogates become U+FFFD). */
export function utf8Encode(text: string): Uint8Array {
  return encoder.encode(text)
}

/** Decode strict UTF-8; a leading BOM is kept, so decoding is byte-faithful. */
export function utf8Decode(bytes: Uint8Array, field?: string): string {
  try {
    return decoder.decode(bytes)
  } catch (cause) {
    const message = field ? `${field}: invalid UTF-8` : 'invalid UTF-8'
    throw new AgentMsgError('invalid_format', message, { cause, field })
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

export function hexEncode(bytes: Uint8Array): string {
  let out = ''
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]!]
  return out
}

function hexNibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48 // 0-9
  if (code >= 97 && code <= 102) return code - 87 // a-f
  if (code >= 65 && code <= 70) return code - 55 // A-F
  return -1
}

export function hexDecode(text: string, field?: string): Uint8Array {
  if (text.length % 2 !== 0) throw invalidFormat('hex has an odd length', field)
  const out = new Uint8Array(text.length / 2)
  for (let i = 0; i < out.length; i++) {
    const hi = hexNibble(text.charCodeAt(2 * i))
    const lo = hexNibble(text.charCodeAt(2 * i + 1))
    if (hi < 0 || lo < 0) throw invalidFormat('invalid hex character', field)
    out[i] = (hi << 4) | lo
  }
  return out
}

/** `chunks` as one array (the chunk itself when there is one). */
export function concat(chunks: readonly Uint8Array[], total?: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(total ?? chunks.reduce((n, c) => n + c.byteLength, 0))
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

/** Compare byte strings in time that depends only on their (public) lengths: for MAC tags. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  // No early exit: it would reveal the matching prefix and let a tag be forged byte by byte.
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!
  return diff === 0
}

// getRandomValues refuses more than 65,536 bytes at once.
const RANDOM_CHUNK = 65_536

/** `n` cryptographically secure random bytes. */
export function randomBytes(n: number): Uint8Array {
  const c = globalThis.crypto
  if (!c || typeof c.getRandomValues !== 'function') {
    throw new Error('randomBytes: globalThis.crypto.getRandomValues is not available')
  }
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i += RANDOM_CHUNK) {
    c.getRandomValues(out.subarray(i, Math.min(n, i + RANDOM_CHUNK)))
  }
  return out
}
