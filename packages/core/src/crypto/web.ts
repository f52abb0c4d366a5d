/** WebCrypto (`crypto.subtle`, Secure Curves Ed25519): no `node:` imports; off the main thread. */
import { base64urlDecode } from '../base64url.js'
import { hexDecode } from '../bytes.js'
import { bytesCache, seedCache } from '../lru.js'
import type { CryptoProvider } from './provider.js'

const ED25519 = { name: 'Ed25519' } as const
const HMAC_SHA256 = { name: 'HMAC', hash: 'SHA-256' } as const

// WebCrypto takes an Ed25519 seed only wrapped as PKCS#8 (RFC 8410): this DER header, then it.
const PKCS8_PREFIX = hexDecode('302e020100300506032b657004220420')

// TS 5.9's DOM types want an ArrayBuffer-backed view; ours are, so this only narrows the type.
const bs = (u: Uint8Array) => u as Uint8Array<ArrayBuffer>

/** A {@link CryptoProvider} on WebCrypto (`name: 'webcrypto'`). */
export function createWebCryptoProvider(
  subtle: SubtleCrypto | undefined = globalThis.crypto?.subtle,
): CryptoProvider {
  if (!subtle) throw new Error('WebCrypto (crypto.subtle) is not available')
  const s: SubtleCrypto = subtle

  function importSeed(seed: Uint8Array, extractable: boolean): Promise<CryptoKey> {
    const pkcs8 = new Uint8Array(48)
    pkcs8.set(PKCS8_PREFIX)
    pkcs8.set(seed, 16)
    const key = s.importKey('pkcs8', pkcs8, ED25519, extractable, ['sign'])
    // The DER copy holds the secret; clear it once WebCrypto has taken its own copy.
    void key.finally(() => pkcs8.fill(0)).catch(() => {})
    return key
  }

  const seedEntry = seedCache(
    (seed): { signKey: Promise<CryptoKey>; publicKey?: Promise<Uint8Array> } => {
      const signKey = importSeed(seed, false)
      // Handled here (no unhandled-rejection warning); every caller awaiting it sees the error.
      signKey.catch(() => {})
      return { signKey }
    },
  )
  // A key WebCrypto refuses to import never verifies anything: cached as null too.
  const verifyKey = bytesCache(1024, (publicKey) =>
    s.importKey('raw', bs(publicKey), ED25519, false, ['verify']).catch(() => null),
  )

  return {
    name: 'webcrypto',

    async ed25519PublicKey(seed) {
      const entry = seedEntry(seed)
      entry.publicKey ??= (async () => {
        // Only an extractable key exports its JWK (`x`); the cached signing key stays not so.
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
      // Some implementations refuse an empty HMAC key; zero-padded, it is the key 0x00.
      const raw = key.length === 0 ? new Uint8Array(1) : key
      const k = await s.importKey('raw', bs(raw), HMAC_SHA256, false, ['sign'])
      return new Uint8Array(await s.sign('HMAC', k, bs(data)))
    },

    sha256: async (data) => new Uint8Array(await s.digest('SHA-256', bs(data))),
    sha512: async (data) => new Uint8Array(await s.digest('SHA-512', bs(data))),
  }
}

// RFC 8032 §7.1 TEST 2: public key, message 0x72, signature.
const PROBE_PK = hexDecode('3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c')
const PROBE_MSG = hexDecode('72')
const PROBE_SIG = hexDecode(
  '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da' +
    '085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
)
// The same with S + L: only a verifier that checks S < L (RFC 8032 §5.1.7, PROFILE §3) refuses it.
const PROBE_SIG_MALLEATED = hexDecode(
  '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da' +
    'f52db7415978abc61b2c2eb6aeebfca0387b2eaeb4302aeeb00d291612bb0c10',
)

const support = new WeakMap<SubtleCrypto, Promise<boolean>>()

/** Whether `subtle` verifies RFC 8032 strictly (checked once per `SubtleCrypto`); never rejects. */
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
