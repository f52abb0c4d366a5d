// Sealed boxes (PROFILE §8): seal and open with @agentmsg/core/sealed-box (noble, pure JS)
// against libsodium-wrappers (libsodium compiled to WebAssembly) in the same run, same keys.
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
    const ours = cryptoBoxSeal(plaintext, publicKey)
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
      [`cryptoBoxSeal, ${kb}`, seal],
      [`cryptoBoxSealOpen, ${kb}`, open],
    ]) {
      rows.push({
        name,
        value: r.ours,
        unit: 'ops/s',
        baseline: r.baseline,
        baselineName: 'libsodium-wrappers',
        ratio: r.ours / r.baseline,
      })
    }
  }
  return rows
}
