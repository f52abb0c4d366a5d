/**
 * Turn SHA-512(seed) into the X25519 secret libsodium's `crypto_sign_ed25519_sk_to_curve25519`
 * gives: its first 32 bytes, clamped. The digest is wiped. No dependencies, so key generation
 * can use it with any provider's SHA-512.
 * @internal
 */
export function x25519SecretFromSha512(h: Uint8Array): Uint8Array {
  const sk = h.slice(0, 32)
  h.fill(0)
  sk[0]! &= 248
  sk[31]! &= 127
  sk[31]! |= 64
  return sk
}
