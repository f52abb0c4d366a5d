// did:key (PROFILE §4, W3C CCG did-method-key): `did:key:z` + base58btc(multicodec varint ‖ key),
// one table of codecs keyed by varint prefix.
import { base58btcDecode, base58btcEncode } from './base58.js'
import { invalidFormat } from './errors.js'
import { Lru } from './lru.js'

/** One multicodec key type that may appear in a did:key; both keys are 32 bytes. */
export interface MulticodecKeyType {
  readonly codec: string
  /** The codec as an unsigned varint, before the key inside the multibase text. */
  readonly prefix: readonly number[]
  /** Identifies an agent (signs), rather than only agreeing on keys. */
  readonly signing: boolean
  /** DID-document types: `publicKeyBase58` method type, `JsonWebKey2020` curve. */
  readonly base58Type: string
  readonly jwkCurve: 'Ed25519' | 'X25519'
}

export const MULTICODEC_KEY_TYPES = {
  ed25519: {
    codec: 'ed25519-pub',
    prefix: [0xed, 0x01],
    signing: true,
    base58Type: 'Ed25519VerificationKey2018',
    jwkCurve: 'Ed25519',
  },
  x25519: {
    codec: 'x25519-pub',
    prefix: [0xec, 0x01],
    signing: false,
    base58Type: 'X25519KeyAgreementKey2019',
    jwkCurve: 'X25519',
  },
} as const satisfies Record<string, MulticodecKeyType>

const KEY_BYTES = 32
const KEY_TYPES: readonly MulticodecKeyType[] = Object.values(MULTICODEC_KEY_TYPES)
export const DID_KEY_PREFIX = 'did:key:'
// Longest multibase text a table entry can produce, with slack: base58 decoding is quadratic,
// so over-long input is refused before it.
const MAX_MULTIBASE_LENGTH = 64

/** `z` + base58btc(varint(type) ‖ key): the multibase "multikey" text used in did:key. */
export function encodeMultikey(type: MulticodecKeyType, publicKey: Uint8Array): string {
  if (publicKey.length !== KEY_BYTES) throw invalidFormat(`${type.codec} key must be 32 bytes`)
  const bytes = new Uint8Array(type.prefix.length + publicKey.length)
  bytes.set(type.prefix)
  bytes.set(publicKey, type.prefix.length)
  return `z${base58btcEncode(bytes)}`
}

/** Decode multikey text into its key type and raw key. */
export function decodeMultikey(
  text: string,
  field?: string,
): { type: MulticodecKeyType; publicKey: Uint8Array } {
  if (typeof text !== 'string' || text[0] !== 'z') {
    throw invalidFormat('multikey must be base58btc multibase (z…)', field)
  }
  if (text.length > MAX_MULTIBASE_LENGTH) throw invalidFormat('multikey is too long', field)
  const bytes = base58btcDecode(text.slice(1), field)
  const type = KEY_TYPES.find((t) => t.prefix.every((b, i) => bytes[i] === b))
  if (!type) throw invalidFormat('unsupported multicodec key type', field)
  const publicKey = bytes.slice(type.prefix.length)
  if (publicKey.length !== KEY_BYTES)
    throw invalidFormat(`${type.codec} key must be 32 bytes`, field)
  return { type, publicKey }
}

/** The did:key of a 32-byte Ed25519 public key. */
export function didKeyFromPublicKey(publicKey: Uint8Array): string {
  return DID_KEY_PREFIX + encodeMultikey(MULTICODEC_KEY_TYPES.ed25519, publicKey)
}

/** The Ed25519 key inside a did:key (structural check only: verification refuses bad points). */
export function publicKeyFromDidKey(did: string, field?: string): Uint8Array {
  // A copy, so callers cannot corrupt the cache.
  return cachedPublicKey(did, field).slice()
}

const decoded = new Lru<Uint8Array>(4096)

/** {@link publicKeyFromDidKey} without the copy, for callers that only check or read it. */
export function cachedPublicKey(did: string, field?: string): Uint8Array {
  if (typeof did !== 'string' || !did.startsWith(DID_KEY_PREFIX)) {
    throw invalidFormat('not a did:key', field)
  }
  // Every message names its sender and usually its recipient by did:key: base58 decoding
  // dominated the per-message cost, so decoded keys are remembered.
  const hit = decoded.get(did)
  if (hit) return hit
  const { type, publicKey } = decodeMultikey(did.slice(DID_KEY_PREFIX.length), field)
  if (!type.signing) throw invalidFormat(`did:key of a ${type.codec} key cannot sign`, field)
  decoded.set(did, publicKey)
  return publicKey
}

/** True when `s` is an Ed25519 did:key that {@link publicKeyFromDidKey} accepts. */
export function isDidKey(s: unknown): s is string {
  try {
    cachedPublicKey(s as string)
    return true
  } catch {
    return false
  }
}

/** The method-specific id (`z6Mk…`), also the fragment of the DID's only key (PROFILE §3). */
export function didKeyFragment(did: string): string {
  cachedPublicKey(did)
  return did.slice(DID_KEY_PREFIX.length)
}
