// Ed25519 → X25519 as libsodium converts, and a did:key's W3C DID document: apart from the root,
// so an app that only signs and verifies does not download the curve arithmetic.
import { etc, Point } from '@noble/ed25519'
import { sha512 } from '@noble/hashes/sha2.js'
import { base58btcEncode } from './base58.js'
import { base64urlEncode } from './base64url.js'
import {
  DID_KEY_PREFIX,
  encodeMultikey,
  MULTICODEC_KEY_TYPES,
  type MulticodecKeyType,
  publicKeyFromDidKey,
} from './did-key.js'
import { invalidFormat } from './errors.js'
import { bytesCache } from './lru.js'
import { x25519SecretFromSha512 } from './x25519-scalar.js'

// Curve25519 field prime.
const P = 2n ** 255n - 19n

/** libsodium's `crypto_sign_ed25519_pk_to_curve25519`: u = (1 + y) / (1 − y) mod p. */
export function ed25519PublicKeyToX25519(publicKey: Uint8Array): Uint8Array {
  if (publicKey.length !== 32) throw invalidFormat('Ed25519 public key must be 32 bytes')
  const u = converted(publicKey)
  if (typeof u === 'string') throw invalidFormat(u)
  return u.slice()
}

// Per peer key (bounded), its validated conversion or why it was refused: the torsion check is a
// full scalar multiplication, and a sender seals to the same peers again and again.
const converted = bytesCache(1024, (publicKey): Uint8Array | string => {
  let point: Point
  try {
    point = Point.fromBytes(publicKey, false)
  } catch {
    return 'Ed25519 public key is not a curve point'
  }
  // PROFILE §8: the keys libsodium refuses (small order, or not in the prime-order subgroup).
  if (point.isSmallOrder() || !point.isTorsionFree()) {
    return 'Ed25519 public key is not in the prime-order subgroup'
  }
  const { y } = point.toAffine()
  // y = 1 is the identity, already refused as small order, so 1 − y is invertible.
  const u = etc.mod((1n + y) * etc.invert(1n - y, P), P)
  const out = new Uint8Array(32)
  let v = u
  for (let i = 0; i < 32; i++, v >>= 8n) out[i] = Number(v & 0xffn)
  return out
})

/** libsodium's `crypto_sign_ed25519_sk_to_curve25519`: the scalar Ed25519 signs with. */
export function ed25519SeedToX25519SecretKey(seed: Uint8Array): Uint8Array {
  if (seed.length !== 32) throw invalidFormat('Ed25519 seed must be 32 bytes')
  return x25519SecretFromSha512(sha512(seed))
}

/** A JWK for an OKP public key (RFC 8037). */
export interface OkpPublicJwk {
  kty: 'OKP'
  crv: 'Ed25519' | 'X25519'
  x: string
}

/** A verification method of a did:key document. */
export interface DidVerificationMethod {
  id: string
  type: string
  controller: string
  publicKeyBase58?: string
  publicKeyJwk?: OkpPublicJwk
}

/** The W3C DID document of a did:key, as the did-method-key test vectors spell it. */
export interface DidDocument {
  '@context': string[]
  id: string
  verificationMethod: DidVerificationMethod[]
  assertionMethod: string[]
  authentication: string[]
  capabilityInvocation: string[]
  capabilityDelegation: string[]
  keyAgreement: string[]
}

/** Options for {@link resolveDidKeyDocument}. */
export interface ResolveDidKeyOptions {
  /** `publicKeyBase58` keys, or `publicKeyJwk` ones. @default 'Ed25519VerificationKey2018' */
  publicKeyFormat?: 'Ed25519VerificationKey2018' | 'JsonWebKey2020'
}

const CONTEXTS = {
  Ed25519VerificationKey2018: [
    'https://www.w3.org/ns/did/v1',
    'https://w3id.org/security/suites/ed25519-2018/v1',
    'https://w3id.org/security/suites/x25519-2019/v1',
  ],
  JsonWebKey2020: ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/suites/jws-2020/v1'],
} as const

/** A did:key's DID document, as the W3C CCG `ed25519-x25519.json` vectors spell it. */
export function resolveDidKeyDocument(
  did: string,
  options: ResolveDidKeyOptions = {},
): DidDocument {
  const format = options.publicKeyFormat ?? 'Ed25519VerificationKey2018'
  const publicKey = publicKeyFromDidKey(did)
  const x25519 = ed25519PublicKeyToX25519(publicKey)
  const signingId = `${did}#${did.slice(DID_KEY_PREFIX.length)}`
  const agreementId = `${did}#${encodeMultikey(MULTICODEC_KEY_TYPES.x25519, x25519)}`
  const method = (id: string, type: MulticodecKeyType, key: Uint8Array): DidVerificationMethod =>
    format === 'JsonWebKey2020'
      ? {
          id,
          type: 'JsonWebKey2020',
          controller: did,
          publicKeyJwk: { kty: 'OKP', crv: type.jwkCurve, x: base64urlEncode(key) },
        }
      : { id, type: type.base58Type, controller: did, publicKeyBase58: base58btcEncode(key) }
  return {
    '@context': [...CONTEXTS[format]],
    id: did,
    verificationMethod: [
      method(signingId, MULTICODEC_KEY_TYPES.ed25519, publicKey),
      method(agreementId, MULTICODEC_KEY_TYPES.x25519, x25519),
    ],
    assertionMethod: [signingId],
    authentication: [signingId],
    capabilityInvocation: [signingId],
    capabilityDelegation: [signingId],
    keyAgreement: [agreementId],
  }
}
