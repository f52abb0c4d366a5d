/**
 * The small crypto surface the SDK needs. One provider is chosen per platform through package
 * conditions (`#crypto-default`): `node:crypto` on Node, WebCrypto in browsers that have
 * Ed25519, `@noble/ed25519` everywhere else. All methods are async so callers can keep many
 * verifications in flight. Every provider accepts and rejects exactly as RFC 8032 and the
 * Wycheproof vectors expect (strict verification, not ZIP-215).
 */
/**
 * Where a provider runs one Ed25519 operation, when it has the choice (only `node:crypto` has:
 * WebCrypto and noble ignore it). `inline`: on the calling thread (Node's sync form), the
 * fastest for a caller doing one at a time, but it holds the event loop for the whole
 * operation. `pool`: in libuv's thread pool (the callback form), so operations in flight run in
 * parallel while the event loop serves other work — what a server wants. `auto`: the provider
 * chooses per call from the load it sees (see `crypto/node-mode.ts`). Unset means `pool`.
 */
export type CryptoMode = 'inline' | 'pool' | 'auto'

export interface CryptoProvider {
  /** A short name for diagnostics and benchmarks: `node`, `webcrypto`, `noble`. */
  readonly name: string
  /** The 32-byte Ed25519 public key of a 32-byte RFC 8032 secret key (seed). */
  ed25519PublicKey(seed: Uint8Array): Promise<Uint8Array>
  /** A 64-byte RFC 8032 signature of `message` by `seed`; `mode` is a hint, see {@link CryptoMode}. */
  ed25519Sign(seed: Uint8Array, message: Uint8Array, mode?: CryptoMode): Promise<Uint8Array>
  /**
   * Strict RFC 8032 verification. Resolves `false` (never throws) for a wrong-length key or
   * signature, a non-canonical encoding, S ≥ L, or a signature that does not verify. `mode` is
   * a hint, see {@link CryptoMode}.
   */
  ed25519Verify(
    publicKey: Uint8Array,
    message: Uint8Array,
    signature: Uint8Array,
    mode?: CryptoMode,
  ): Promise<boolean>
  /**
   * Optional: the UTF-8 bytes of `text`, made the platform's cheapest way, to be handed only to
   * this provider's own methods (they may share memory with other data, e.g. Node's pooled
   * Buffers). Absent: callers use `TextEncoder`.
   */
  utf8?(text: string): Uint8Array
  /** HMAC-SHA256 of `data` under `key`. */
  hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array>
  /** SHA-256 of `data`. */
  sha256(data: Uint8Array): Promise<Uint8Array>
  /** SHA-512 of `data` (derives the X25519 secret of an Ed25519 key). */
  sha512(data: Uint8Array): Promise<Uint8Array>
}
