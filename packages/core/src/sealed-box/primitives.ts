// libsodium-compatible sealed boxes (PROFILE §8), composed from audited noble primitives.
import { hsalsa, xsalsa20poly1305 } from '@noble/ciphers/salsa.js'
import { x25519 } from '@noble/curves/ed25519.js'
import { blake2b } from '@noble/hashes/blake2.js'
import { invalidFormat } from '../errors.js'

/** Bytes a sealed box adds to its plaintext: ephemeral public key (32) + Poly1305 tag (16). */
export const SEALED_BOX_OVERHEAD = 48

const SIGMA = new TextEncoder().encode('expand 32-byte k')

/** A native-endian word view of a fresh, aligned copy of `bytes` (what `hsalsa` expects). */
function words(bytes: Uint8Array): Uint32Array {
  const copy = bytes.slice()
  return new Uint32Array(copy.buffer, 0, copy.length / 4)
}

/** libsodium `crypto_box_beforenm`: HSalsa20(X25519(sk, pk), 0¹⁶); refuses an all-zero secret. */
function boxKey(secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  let shared: Uint8Array
  try {
    // Throws for an all-zero shared secret (a small-order public key), as libsodium returns -1.
    shared = x25519.getSharedSecret(secretKey, publicKey)
  } catch {
    throw invalidFormat('sealed box: X25519 key agreement failed (small-order key)')
  }
  const out = new Uint8Array(32)
  hsalsa(words(SIGMA), words(shared), new Uint32Array(4), new Uint32Array(out.buffer))
  shared.fill(0)
  return out
}

/** libsodium's sealed-box nonce: BLAKE2b-192(ephemeral pk ‖ recipient pk). */
function sealNonce(ephemeralPk: Uint8Array, recipientPk: Uint8Array): Uint8Array {
  const input = new Uint8Array(64)
  input.set(ephemeralPk, 0)
  input.set(recipientPk, 32)
  return blake2b(input, { dkLen: 24 })
}

function checkX25519Key(key: Uint8Array, what: string): void {
  if (!(key instanceof Uint8Array) || key.length !== 32) {
    throw invalidFormat(`sealed box: ${what} must be 32 bytes`)
  }
}

/** libsodium `crypto_box_seal` (PROFILE §8): `epk (32) ‖ tag (16) ‖ ciphertext`. */
export function cryptoBoxSeal(plaintext: Uint8Array, recipientPublicKey: Uint8Array): Uint8Array {
  checkX25519Key(recipientPublicKey, 'recipient X25519 public key')
  const { secretKey: esk, publicKey: epk } = x25519.keygen()
  try {
    const key = boxKey(esk, recipientPublicKey)
    const box = xsalsa20poly1305(key, sealNonce(epk, recipientPublicKey)).encrypt(plaintext)
    key.fill(0)
    const out = new Uint8Array(32 + box.length)
    out.set(epk, 0)
    out.set(box, 32)
    return out
  } finally {
    esk.fill(0)
  }
}

/** libsodium `crypto_box_seal_open` (PROFILE §8): the inverse of {@link cryptoBoxSeal}. */
export function cryptoBoxSealOpen(
  ciphertext: Uint8Array,
  recipientPublicKey: Uint8Array,
  recipientSecretKey: Uint8Array,
): Uint8Array {
  checkX25519Key(recipientPublicKey, 'recipient X25519 public key')
  checkX25519Key(recipientSecretKey, 'recipient X25519 secret key')
  if (!(ciphertext instanceof Uint8Array) || ciphertext.length < SEALED_BOX_OVERHEAD) {
    throw invalidFormat(`sealed box: ciphertext shorter than ${SEALED_BOX_OVERHEAD} bytes`)
  }
  const epk = ciphertext.subarray(0, 32)
  const key = boxKey(recipientSecretKey, epk)
  try {
    return xsalsa20poly1305(key, sealNonce(epk, recipientPublicKey)).decrypt(
      ciphertext.subarray(32),
    )
  } catch {
    throw invalidFormat('sealed box: ciphertext does not open (tampered or not for this key)')
  } finally {
    key.fill(0)
  }
}
