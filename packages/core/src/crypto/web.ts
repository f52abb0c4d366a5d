/**
 * WebCrypto provider (`crypto.subtle`, Ed25519 per the Secure Curves spec). Browser-safe: no
 * `node:` imports. Node 20 has the same API on `globalThis.crypto.subtle`, so it is tested there
 * too. WebCrypto runs each operation off the main thread, so many verifications in flight
 * overlap.
 */

import { base64urlDecode } from '../base64url.js'
import { constantTimeEqual, hexDecode } from '../bytes.js'
import { Lru } from '../lru.js'
import type { CryptoProvider } from './provider.js'

const ED25519 = { name: 'Ed25519' } as const
const HMAC_SHA256 = { name: 'HMAC', hash: 'SHA-256' } as const

// WebCrypto takes an Ed25519 seed only wrapped as PKCS#8 (RFC 8410): this DER header, then the
// 32 bytes. The header is fixed because the seed's length is.
const PKCS8_PREFIX = hexDecode('302e020100300506032b657004220420')

/** Bounded number of imported public keys kept, so a flood of new keys cannot grow memory. */
const VERIFY_CACHE_SIZE = 1024
/** Seeds are few (one per local identity); the bound only guards against misuse. */
const SEED_CACHE_SIZE = 64

// TS 5.9's DOM types want an ArrayBuffer-backed view; our arrays are (WebCrypto rejects
// SharedArrayBuffer views at run time anyway), so this only narrows the type.
const bs = (u: Uint8Array) => u as Uint8Array<ArrayBuffer>

/** Latin-1 string of bytes: a cheap, exact Map key (one char per byte). */
function bytesKey(bytes: Uint8Array): string {
  return String.fromCharCode.apply(null, bytes as unknown as number[])
}

interface SeedEntry {
  /** A private copy, so a caller that later overwrites its array cannot poison the cache. */
  seed: Uint8Array
  signKey: Promise<CryptoKey>
  publicKey?: Promise<Uint8Array>
}

/**
 * A {@link CryptoProvider} on WebCrypto (`name: 'webcrypto'`).
 *
 * @example
 * if (await webCryptoSupportsEd25519()) provider = createWebCryptoProvider()
 */
export function createWebCryptoProvider(
  subtle: SubtleCrypto | undefined = globalThis.crypto?.subtle,
): CryptoProvider {
  if (!subtle) throw new Error('WebCrypto (crypto.subtle) is not available')
  const s: SubtleCrypto = subtle

  // Keyed by array object for the common case (the same identity object signing repeatedly),
  // and by content for callers that hand over a fresh copy of the seed each time.
  const seedsByObject = new WeakMap<Uint8Array, SeedEntry>()
  const seedsByValue = new Lru<SeedEntry>(SEED_CACHE_SIZE)
  const verifyKeys = new Lru<Promise<CryptoKey | null>>(VERIFY_CACHE_SIZE)

  function importSeed(seed: Uint8Array, extractable: boolean): Promise<CryptoKey> {
    const pkcs8 = new Uint8Array(48)
    pkcs8.set(PKCS8_PREFIX)
    pkcs8.set(seed, 16)
    const key = s.importKey('pkcs8', pkcs8, ED25519, extractable, ['sign'])
    // The DER copy holds the secret; clear it once WebCrypto has taken its own copy.
    void key.finally(() => pkcs8.fill(0)).catch(() => {})
    return key
  }

  function seedEntry(seed: Uint8Array): SeedEntry {
    if (seed.length !== 32) throw new RangeError('Ed25519 seed must be 32 bytes')
    const byObject = seedsByObject.get(seed)
    if (byObject && constantTimeEqual(byObject.seed, seed)) return byObject
    const valueKey = bytesKey(seed)
    let entry = seedsByValue.get(valueKey)
    if (!entry) {
      entry = { seed: seed.slice(), signKey: importSeed(seed, false) }
      // Mark a failed import as handled here (no unhandled-rejection warning); every caller
      // awaiting it still sees the error.
      entry.signKey.catch(() => {})
      seedsByValue.set(valueKey, entry)
    }
    seedsByObject.set(seed, entry)
    return entry
  }

  function verifyKey(publicKey: Uint8Array): Promise<CryptoKey | null> {
    const k = bytesKey(publicKey)
    let key = verifyKeys.get(k)
    if (!key) {
      // A key WebCrypto refuses to import never verifies anything: cache that as null too.
      key = s.importKey('raw', bs(publicKey), ED25519, false, ['verify']).catch(() => null)
      verifyKeys.set(k, key)
    }
    return key
  }

  return {
    name: 'webcrypto',

    async ed25519PublicKey(seed) {
      const entry = seedEntry(seed)
      entry.publicKey ??= (async () => {
        // Only an extractable key exports its JWK (whose `x` is the public key); that key is
        // used once here and dropped, the cached signing key stays non-extractable.
        const jwk = await s.exportKey('jwk', await importSeed(entry.seed, true))
        return base64urlDecode(jwk.x ?? '', 'jwk.x')
      })()
      return (await entry.publicKey).slice()
    },

    async ed25519Sign(seed, message) {
      const key = await seedEntry(seed).signKey
      return new Uint8Array(await s.sign(ED25519, key, bs(message)))
    },

    async ed25519Verify(publicKey, message, signature) {
      if (publicKey.length !== 32 || signature.length !== 64) return false
      try {
        const key = await verifyKey(publicKey)
        if (!key) return false
        return await s.verify(ED25519, key, bs(signature), bs(message))
      } catch {
        return false
      }
    },

    async hmacSha256(key, data) {
      // HMAC zero-pads the key to the block size, so an empty key equals the key 0x00; some
      // WebCrypto implementations refuse to import a zero-length HMAC key.
      const raw = key.length === 0 ? new Uint8Array(1) : key
      const k = await s.importKey('raw', bs(raw), HMAC_SHA256, false, ['sign'])
      return new Uint8Array(await s.sign('HMAC', k, bs(data)))
    },

    async sha256(data) {
      return new Uint8Array(await s.digest('SHA-256', bs(data)))
    },

    async sha512(data) {
      return new Uint8Array(await s.digest('SHA-512', bs(data)))
    },
  }
}

// RFC 8032 §7.1 TEST 2: public key, message 0x72, signature.
const PROBE_PK = hexDecode('3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c')
const PROBE_MSG = hexDecode('72')
const PROBE_SIG = hexDecode(
  '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da' +
    '085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
)
// The same signature with S replaced by S + L: it satisfies the verification equation, so only a
// verifier that checks S < L (RFC 8032 §5.1.7, PROFILE §3) refuses it.
const PROBE_SIG_MALLEATED = hexDecode(
  '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da' +
    'f52db7415978abc61b2c2eb6aeebfca0387b2eaeb4302aeeb00d291612bb0c10',
)

const support = new WeakMap<SubtleCrypto, Promise<boolean>>()

/**
 * Whether `subtle` implements Ed25519 well enough for this SDK: it must import a raw public key,
 * accept a known RFC 8032 signature and refuse its S + L malleation. Runs once per `SubtleCrypto`
 * and caches the answer; never rejects.
 */
export function webCryptoSupportsEd25519(
  subtle: SubtleCrypto | undefined = globalThis.crypto?.subtle,
): Promise<boolean> {
  if (!subtle) return Promise.resolve(false)
  let answer = support.get(subtle)
  if (!answer) {
    answer = probe(subtle)
    support.set(subtle, answer)
  }
  return answer
}

async function probe(subtle: SubtleCrypto): Promise<boolean> {
  try {
    const key = await subtle.importKey('raw', bs(PROBE_PK), ED25519, false, ['verify'])
    const good = await subtle.verify(ED25519, key, bs(PROBE_SIG), bs(PROBE_MSG))
    const bad = await subtle
      .verify(ED25519, key, bs(PROBE_SIG_MALLEATED), bs(PROBE_MSG))
      .catch(() => false)
    return good && !bad
  } catch {
    return false
  }
}
