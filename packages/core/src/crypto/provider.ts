/**
 * Where a provider runs an Ed25519 operation, when it has the choice (only `node:crypto`):
 * `inline` on the calling thread, fastest one at a time but holding the event loop; `pool` in
 * libuv's thread pool, in parallel, what a server wants; `auto` chosen per call from the load
 * (crypto/node-mode.ts). Unset means `pool`.
 */
export type CryptoMode = 'inline' | 'pool' | 'auto'

/**
 * The crypto the SDK needs, one provider per platform (`#crypto-default`). Async, so callers keep
 * many verifications in flight; every provider verifies strictly (RFC 8032 and Wycheproof, not
 * ZIP-215).
 */
export interface CryptoProvider {
  /** A short name for diagnostics and benchmarks: `node`, `webcrypto`, `noble`. */
  readonly name: string
  /** The 32-byte Ed25519 public key of a 32-byte RFC 8032 secret key (seed). */
  ed25519PublicKey(seed: Uint8Array): Promise<Uint8Array>
  /** A 64-byte RFC 8032 signature of `message` by `seed`; `mode` is a hint. */
  ed25519Sign(seed: Uint8Array, message: Uint8Array, mode?: CryptoMode): Promise<Uint8Array>
  /** Strict RFC 8032 verification: `false`, never a throw, for anything that does not verify. */
  ed25519Verify(
    publicKey: Uint8Array,
    message: Uint8Array,
    signature: Uint8Array,
    mode?: CryptoMode,
  ): Promise<boolean>
  /** Optional: UTF-8 the platform's cheapest way, for this provider's methods only (may share memory). */
  utf8?(text: string): Uint8Array
  /** HMAC-SHA-256 (level 0 signatures). */
  hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array>
  /** SHA-256. */
  sha256(data: Uint8Array): Promise<Uint8Array>
  /** SHA-512 (derives the X25519 secret of an Ed25519 key). */
  sha512(data: Uint8Array): Promise<Uint8Array>
}

// signMessage / verifyMessage calls in flight in this realm, counted at the call rather than at
// the crypto (inline operations never overlap, the calls do): `auto` pools when others are.
let calls = 0

export function callStarted(): void {
  calls++
}

export function callEnded(): void {
  calls--
}

export function callsInFlight(): number {
  return calls
}

/**
 * The pure-JS noble provider (`@noble/ed25519`, `@noble/hashes`), for runtimes with neither
 * `node:crypto` nor a WebCrypto Ed25519; loaded on this call, so a bundle that never asks for it
 * does not carry it.
 */
export async function loadNobleCryptoProvider(): Promise<CryptoProvider> {
  return (await import('./noble.js')).nobleCryptoProvider
}
