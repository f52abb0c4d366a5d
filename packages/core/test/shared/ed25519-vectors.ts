/**
 * Ed25519 known-answer checks, runtime-agnostic (no `node:` imports): vitest runs them on Node
 * and the browser suite runs the same code in Chromium against the built package. Vectors are
 * passed in already parsed, so each runner loads them its own way.
 */
import type { CryptoProvider } from '../../src/crypto/provider.js'

/** Outcome of one vector file: how many cases ran and a line per failed one. */
export interface VectorCheckResult {
  file: string
  total: number
  failures: string[]
}

interface Rfc8032Record {
  name: string
  secretKey: string
  publicKey: string
  message: string
  signature: string
}

interface WycheproofEd25519 {
  testGroups: {
    publicKey: { pk: string }
    tests: { tcId: number; comment: string; msg: string; sig: string; result: string }[]
  }[]
}

function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** A verification that throws counts as a refusal, which the invalid vectors allow. */
async function verifies(p: CryptoProvider, pk: Uint8Array, msg: Uint8Array, sig: Uint8Array) {
  try {
    return await p.ed25519Verify(pk, msg, sig)
  } catch {
    return false
  }
}

/**
 * Run RFC 8032 §7.1 (public key from seed, deterministic signature, verify, and a one-bit
 * change refused) and every Wycheproof Ed25519 test (`valid` verifies, `invalid` does not)
 * against `provider`.
 */
export async function checkEd25519Vectors(
  provider: CryptoProvider,
  data: { rfc8032: unknown; wycheproof: unknown },
): Promise<VectorCheckResult[]> {
  const rfc: VectorCheckResult = { file: 'ed25519-rfc8032-7.1.json', total: 0, failures: [] }
  for (const v of data.rfc8032 as Rfc8032Record[]) {
    rfc.total++
    const seed = fromHex(v.secretKey)
    const msg = fromHex(v.message)
    const sig = fromHex(v.signature)
    const pk = fromHex(v.publicKey)
    try {
      const gotPk = toHex(await provider.ed25519PublicKey(seed))
      if (gotPk !== v.publicKey) rfc.failures.push(`${v.name}: public key ${gotPk}`)
      const gotSig = toHex(await provider.ed25519Sign(seed, msg))
      if (gotSig !== v.signature) rfc.failures.push(`${v.name}: signature ${gotSig}`)
      if (!(await verifies(provider, pk, msg, sig))) rfc.failures.push(`${v.name}: not verified`)
      // Flip one bit in each of R, S and the message: all three must be refused.
      for (const [what, i] of [
        ['R', 3],
        ['S', 40],
      ] as const) {
        const bad = sig.slice()
        bad[i]! ^= 0x01
        if (await verifies(provider, pk, msg, bad)) rfc.failures.push(`${v.name}: flipped ${what}`)
      }
      const badMsg = msg.length > 0 ? msg.slice() : new Uint8Array(1)
      if (msg.length > 0) badMsg[0]! ^= 0x80
      if (await verifies(provider, pk, badMsg, sig)) rfc.failures.push(`${v.name}: changed msg`)
    } catch (e) {
      rfc.failures.push(`${v.name}: threw ${String(e)}`)
    }
  }

  const wp: VectorCheckResult = { file: 'wycheproof-ed25519_test.json', total: 0, failures: [] }
  for (const group of (data.wycheproof as WycheproofEd25519).testGroups) {
    const pk = fromHex(group.publicKey.pk)
    for (const t of group.tests) {
      wp.total++
      const ok = await verifies(provider, pk, fromHex(t.msg), fromHex(t.sig))
      if (ok !== (t.result === 'valid')) {
        wp.failures.push(`tcId ${t.tcId} (${t.comment}): expected ${t.result}, verify=${ok}`)
      }
    }
  }
  return [rfc, wp]
}
