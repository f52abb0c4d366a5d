// Sealed boxes (PROFILE §8): seal and open with @agentmsg/core/sealed-box (X25519 in node:crypto,
// XSalsa20-Poly1305 and BLAKE2b in noble) against libsodium-wrappers (libsodium compiled to
// WebAssembly), interleaved in the same run with the same keys. Target: ≥ 1.0× at 1 KB.
import { randomBytes } from 'node:crypto'
import { cryptoBoxSeal, cryptoBoxSealOpen } from '@agentmsg/core/sealed-box'
import sodium from 'libsodium-wrappers'
import { comparePair } from './lib.mjs'

export async function benchSealedBox() {
  await sodium.ready
  const { publicKey, privateKey } = sodium.crypto_box_keypair()
  const rows = []
  for (const size of [1024, 100 * 1024]) {
    const plaintext = new Uint8Array(randomBytes(size))
    const ours = await cryptoBoxSeal(plaintext, publicKey)
    const theirs = sodium.crypto_box_seal(plaintext, publicKey)
    const seal = await comparePair(
      () => cryptoBoxSeal(plaintext, publicKey),
      () => sodium.crypto_box_seal(plaintext, publicKey),
    )
    const open = await comparePair(
      () => cryptoBoxSealOpen(ours, publicKey, privateKey),
      () => sodium.crypto_box_seal_open(theirs, publicKey, privateKey),
    )
    const kb = `${size / 1024} KB`
    for (const [name, r] of [
      [`seal ${kb}`, seal],
      [`open ${kb}`, open],
    ]) {
      rows.push({
        name,
        value: r.ours,
        unit: 'ops/s',
        baseline: r.baseline,
        baselineName: 'libsodium-wrappers',
        ratio: r.ours / r.baseline,
        // The 1 KB rows carry the target; 100 KB is context (XSalsa20-Poly1305 dominates there).
        target: size === 1024 ? '≥ 1.0×' : undefined,
      })
    }
  }
  return rows
}
