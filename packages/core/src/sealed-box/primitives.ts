// libsodium-compatible sealed boxes (PROFILE §8): X25519 on the platform's own (`#x25519`),
// XSalsa20-Poly1305 and BLAKE2b on audited noble primitives.

import { hsalsa, xsalsa20poly1305 } from '@noble/ciphers/salsa.js'
import { blake2b } from '@noble/hashes/blake2.js'
import { x25519Backend } from '#x25519'
import { invalidFormat } from '../errors.js'
import type { X25519Backend } from './x25519-backend.js'

/** Bytes a sealed box adds to its plaintext: ephemeral public key (32) + Poly1305 tag (16). */
export const SEALED_BOX_OVERHEAD = 48

const SIGMA = new TextEncoder().encode('expand 32-byte k')
const SMALL_ORDER = 'sealed box: X25519 key agreement failed (small-order key)'

/** A native-endian word view of a fresh, aligned copy of `bytes` (what `hsalsa` expects). */
function words(bytes: Uint8Array): Uint32Array {
  const copy = bytes.slice()
  return new Uint32Array(copy.buffer, 0, copy.length / 4)
}

/**
 * libsodium `crypto_box_beforenm`: HSalsa20(shared, 0¹⁶). An all-zero shared secret (a
 * small-order public key) is refused as libsodium returns -1: every backend refuses it itself
 * (OpenSSL, WebCrypto and noble throw); checked here again so no backend can let one through.
 */
async function boxKey(agree: () => Promise<Uint8Array>): Promise<Uint8Array> {
  let shared: Uint8Array
  try {
    shared = await agree()
  } catch {
    throw invalidFormat(SMALL_ORDER)
  }
  if (shared.every((b) => b === 0)) throw invalidFormat(SMALL_ORDER)
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

/** {@link cryptoBoxSeal} on a given backend (tests run each platform's). */
export async function sealWith(
  x: X25519Backend,
  plaintext: Uint8Array,
  recipientPublicKey: Uint8Array,
): Promise<Uint8Array> {
  checkX25519Key(recipientPublicKey, 'recipient X25519 public key')
  let epk: Uint8Array | undefined
  const key = await boxKey(async () => {
    const e = await x.ephemeral(recipientPublicKey)
    epk = e.publicKey
    return e.shared
  })
  const ephemeralPk = epk as Uint8Array
  const box = xsalsa20poly1305(key, sealNonce(ephemeralPk, recipientPublicKey)).encrypt(plaintext)
  const out = new Uint8Array(32 + box.length)
  out.set(ephemeralPk, 0)
  out.set(box, 32)
  key.fill(0)
  return out
}

/** {@link cryptoBoxSealOpen} on a given backend. */
export async function openWith(
  x: X25519Backend,
  ciphertext: Uint8Array,
  recipientPublicKey: Uint8Array,
  recipientSecretKey: Uint8Array,
): Promise<Uint8Array> {
  checkX25519Key(recipientPublicKey, 'recipient X25519 public key')
  checkX25519Key(recipientSecretKey, 'recipient X25519 secret key')
  if (!(ciphertext instanceof Uint8Array) || ciphertext.length < SEALED_BOX_OVERHEAD) {
    throw invalidFormat(`sealed box: ciphertext shorter than ${SEALED_BOX_OVERHEAD} bytes`)
  }
  const epk = ciphertext.subarray(0, 32)
  const key = await boxKey(() => x.shared(recipientSecretKey, epk))
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

/** libsodium `crypto_box_seal` (PROFILE §8): `epk (32) ‖ tag (16) ‖ ciphertext`. */
export async function cryptoBoxSeal(
  plaintext: Uint8Array,
  recipientPublicKey: Uint8Array,
): Promise<Uint8Array> {
  return sealWith(await x25519Backend(), plaintext, recipientPublicKey)
}

/** libsodium `crypto_box_seal_open` (PROFILE §8): the inverse of {@link cryptoBoxSeal}. */
export async function cryptoBoxSealOpen(
  ciphertext: Uint8Array,
  recipientPublicKey: Uint8Array,
  recipientSecretKey: Uint8Array,
): Promise<Uint8Array> {
  return openWith(await x25519Backend(), ciphertext, recipientPublicKey, recipientSecretKey)
}
