// SHA-512(seed) → the clamped X25519 secret libsodium derives (the digest is wiped). Apart so
// key generation uses it with any provider's SHA-512 without loading curve arithmetic.
export function x25519SecretFromSha512(h: Uint8Array): Uint8Array {
  const sk = h.slice(0, 32)
  h.fill(0)
  sk[0]! &= 248
  sk[31]! &= 127
  sk[31]! |= 64
  return sk
}
