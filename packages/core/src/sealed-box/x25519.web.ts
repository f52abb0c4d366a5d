// `#x25519` off Node: WebCrypto X25519 where it computes RFC 7748 §6.1, else @noble/curves,
// imported only then (a browser with WebCrypto X25519 never downloads the curve code).
import { hexDecode } from '../bytes.js'
import { seedCache } from '../lru.js'

/** X25519 as a sealed box needs it (PROFILE §8): `node`, `webcrypto` or `noble`. */
export interface X25519Backend {
  readonly name: string
  /** A fresh key pair's public key and its shared secret with `peer` (a seal's ephemeral side). */
  ephemeral(peer: Uint8Array): Promise<{ publicKey: Uint8Array; shared: Uint8Array }>
  shared(secretKey: Uint8Array, peer: Uint8Array): Promise<Uint8Array>
}

const X25519 = { name: 'X25519' } as const
// WebCrypto takes a raw X25519 secret only wrapped as PKCS#8 (RFC 8410): this DER header, then it.
const PKCS8_PREFIX = hexDecode('302e020100300506032b656e04220420')

const bs = (u: Uint8Array) => u as Uint8Array<ArrayBuffer> // TS 5.9 DOM types: narrows only

/** X25519 on WebCrypto (`name: 'webcrypto'`); WebCrypto refuses an all-zero shared secret. */
export function createWebCryptoX25519(s: SubtleCrypto): X25519Backend {
  const derive = async (privateKey: CryptoKey, peer: Uint8Array) => {
    const pub = await s.importKey('raw', bs(peer), X25519, true, [])
    return new Uint8Array(await s.deriveBits({ ...X25519, public: pub }, privateKey, 256))
  }
  const secretKey = seedCache((sk) => {
    const pkcs8 = new Uint8Array(48)
    pkcs8.set(PKCS8_PREFIX)
    pkcs8.set(sk, 16)
    const key = s.importKey('pkcs8', pkcs8, X25519, false, ['deriveBits'])
    void key.finally(() => pkcs8.fill(0)).catch(() => {})
    return { key }
  })
  return {
    name: 'webcrypto',
    async ephemeral(peer) {
      const pair = (await s.generateKey(X25519, false, ['deriveBits'])) as CryptoKeyPair
      const [raw, shared] = await Promise.all([
        s.exportKey('raw', pair.publicKey),
        derive(pair.privateKey, peer),
      ])
      return { publicKey: new Uint8Array(raw), shared }
    },
    shared: async (sk, peer) => derive(await secretKey(sk).key, peer),
  }
}

// RFC 7748 §6.1: Alice's secret key, Bob's public key, their shared secret.
const PROBE_SK = hexDecode('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a')
const PROBE_PK = hexDecode('de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f')
const PROBE_SHARED = hexDecode('4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742')

/** Whether `subtle` computes X25519 as RFC 7748 does; never rejects. */
export async function webCryptoSupportsX25519(subtle: SubtleCrypto | undefined): Promise<boolean> {
  if (!subtle) return false
  try {
    const shared = await createWebCryptoX25519(subtle).shared(PROBE_SK, PROBE_PK)
    return shared.every((b, i) => b === PROBE_SHARED[i])
  } catch {
    return false
  }
}

let chosen: Promise<X25519Backend> | undefined

/** The platform's X25519, decided on the first call (one probe, then cached). */
export function x25519Backend(): Promise<X25519Backend> {
  chosen ??= (async () => {
    const subtle = globalThis.crypto?.subtle
    if (subtle && (await webCryptoSupportsX25519(subtle))) return createWebCryptoX25519(subtle)
    return (await import('./x25519.noble.js')).nobleX25519
  })()
  return chosen
}
