import { getDefaultCryptoProvider } from '#crypto-default'
import { randomBytes } from './bytes.js'
import type { CryptoMode, CryptoProvider } from './crypto/provider.js'
import { didKeyFragment, didKeyFromPublicKey } from './did-key.js'
import { invalidFormat } from './errors.js'
import type { SignatureAlg } from './types.js'
import { x25519SecretFromSha512 } from './x25519-scalar.js'

/** An Ed25519 key pair. `secretKey` is the 32-byte RFC 8032 secret (seed). */
export interface KeyPair {
  /** 32 bytes. */
  publicKey: Uint8Array
  /** The 32-byte seed; keep it secret. */
  secretKey: Uint8Array
  /** Derived from the seed (libsodium's conversion), so sealed-box decryption needs no rederivation. */
  x25519SecretKey: Uint8Array
}

/** Signs a signing input; implement it to keep keys elsewhere (WebCrypto, a token, a process). */
export interface Signer {
  /** The signature algorithm. */
  readonly alg: SignatureAlg
  /** The full key id. */
  readonly keyId: string
  /** `mode`: where the work may run (see `CryptoMode`); a signer without a choice ignores it. */
  sign(data: Uint8Array, mode?: CryptoMode): Promise<Uint8Array>
  /** Optional: `text` as UTF-8 the way {@link sign} wants it (may share memory). */
  utf8?(text: string): Uint8Array
}

/** Generate a new Ed25519 key pair from the platform's secure random source. */
export async function generateKeyPair(provider?: CryptoProvider): Promise<KeyPair> {
  return keyPairFromSeed(randomBytes(32), provider)
}

/** Rebuild a key pair from its 32-byte secret (seed). */
export async function keyPairFromSeed(
  seed: Uint8Array,
  provider?: CryptoProvider,
): Promise<KeyPair> {
  if (!(seed instanceof Uint8Array) || seed.length !== 32) {
    throw invalidFormat('an Ed25519 secret key is 32 bytes', 'secretKey')
  }
  const p = provider ?? getDefaultCryptoProvider()
  const secretKey = seed.slice()
  return {
    publicKey: await p.ed25519PublicKey(secretKey),
    secretKey,
    x25519SecretKey: x25519SecretFromSha512(await p.sha512(secretKey)),
  }
}

/** A {@link Signer} for an Ed25519 key pair; `keyId` defaults to its did:key's. */
export function ed25519Signer(
  keyPair: Pick<KeyPair, 'publicKey' | 'secretKey'>,
  keyId?: string,
  provider?: CryptoProvider,
): Signer {
  const p = provider ?? getDefaultCryptoProvider()
  const did = didKeyFromPublicKey(keyPair.publicKey)
  const id = keyId ?? `${did}#${didKeyFragment(did)}`
  const seed = keyPair.secretKey
  const signer: Signer = {
    alg: 'ed25519',
    keyId: id,
    sign: (data, mode) => p.ed25519Sign(seed, data, mode),
  }
  const utf8 = p.utf8?.bind(p)
  if (utf8) signer.utf8 = utf8
  return signer
}
