// The X25519 a sealed box runs on (PROFILE §8), one per platform through `#x25519`: node:crypto
// on Node, WebCrypto where it has X25519, noble (loaded only then) elsewhere.

/** X25519 as sealing needs it; every result is the raw 32-byte u-coordinate or secret. */
export interface X25519Backend {
  /** `node`, `webcrypto` or `noble`, for diagnostics, tests and benchmarks. */
  readonly name: string
  /** A fresh key pair's public key and its shared secret with `peer` (a seal's ephemeral side). */
  ephemeral(peer: Uint8Array): Promise<{ publicKey: Uint8Array; shared: Uint8Array }>
  /** X25519(secretKey, peer). The platform's form of `secretKey` is cached per key. */
  shared(secretKey: Uint8Array, peer: Uint8Array): Promise<Uint8Array>
  /** The public key of `secretKey`. */
  publicKey(secretKey: Uint8Array): Promise<Uint8Array>
}
