// libsodium-compatible sealed boxes (PROFILE §8): X25519 on the platform's own (`#x25519`),
// XSalsa20-Poly1305 and BLAKE2b on audited noble primitives.
import { hsalsa, xsalsa20poly1305 } from '@noble/ciphers/salsa.js'
import { blake2b } from '@noble/hashes/blake2.js'
import { x25519Backend } from '#x25519'
import { invalidFormat } from '../errors.js'
import type { X25519Backend } from './x25519.web.js'

/** Bytes a sealed box adds to its plaintext: ephemeral public key (32) + Poly1305 tag (16). */
export const SEALED_BOX_OVERHEAD = 48

const SIGMA = new TextEncoder().encode('expand 32-byte k')

// An all-zero shared secret (a small-order key), refused as libsodium returns -1.
const smallOrder = (): never => {
  throw invalidFormat('sealed box: X25519 key agreement failed (small-order key)')
}

/** A native-endian word view of a fresh, aligned copy of `bytes` (what `hsalsa` expects). */
function words(bytes: Uint8Array): Uint32Array {
  const copy = bytes.slice()
  return new Uint32Array(copy.buffer, 0, copy.length / 4)
}

// libsodium `crypto_box_beforenm`: HSalsa20(shared, 0¹⁶). OpenSSL, WebCrypto and noble refuse
// an all-zero secret themselves; checked again so no backend lets one through.
function boxKey(shared: Uint8Array): Uint8Array {
  if (shared.every((b) => b === 0)) smallOrder()
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
export async function sealWith(x: X25519Backend, plaintext: Uint8Array, recipientPk: Uint8Array) {
  checkX25519Key(recipientPk, 'recipient X25519 public key')
  const { publicKey: epk, shared } = await x.ephemeral(recipientPk).catch(smallOrder)
  const key = boxKey(shared)
  const box = xsalsa20poly1305(key, sealNonce(epk, recipientPk)).encrypt(plaintext)
  key.fill(0)
  const out = new Uint8Array(32 + box.length)
  out.set(epk, 0)
  out.set(box, 32)
  return out
}

/** {@link cryptoBoxSealOpen} on a given backend. */
export async function openWith(
  x: X25519Backend,
  ciphertext: Uint8Array,
  recipientPk: Uint8Array,
  recipientSk: Uint8Array,
): Promise<Uint8Array> {
  checkX25519Key(recipientPk, 'recipient X25519 public key')
  checkX25519Key(recipientSk, 'recipient X25519 secret key')
  if (!(ciphertext instanceof Uint8Array) || ciphertext.length < SEALED_BOX_OVERHEAD) {
    throw invalidFormat(`sealed box: ciphertext shorter than ${SEALED_BOX_OVERHEAD} bytes`)
  }
  const epk = ciphertext.subarray(0, 32)
  const key = boxKey(await x.shared(recipientSk, epk).catch(smallOrder))
  try {
    return xsalsa20poly1305(key, sealNonce(epk, recipientPk)).decrypt(ciphertext.subarray(32))
  } catch {
    throw invalidFormat('sealed box: ciphertext does not open (tampered or not for this key)')
  } finally {
    key.fill(0)
  }
}

/** libsodium `crypto_box_seal` (PROFILE §8): `epk (32) ‖ tag (16) ‖ ciphertext`. */
export const cryptoBoxSeal = async (plaintext: Uint8Array, recipientPk: Uint8Array) =>
  sealWith(await x25519Backend(), plaintext, recipientPk)

/** libsodium `crypto_box_seal_open` (PROFILE §8): the inverse of {@link cryptoBoxSeal}. */
export const cryptoBoxSealOpen = async (ct: Uint8Array, pk: Uint8Array, sk: Uint8Array) =>
  openWith(await x25519Backend(), ct, pk, sk)
