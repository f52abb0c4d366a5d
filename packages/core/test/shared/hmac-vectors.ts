/**
 * HMAC-SHA256 known-answer checks, runtime-agnostic (no `node:` imports), shared by the Node
 * and browser suites. Vectors and the comparison function are passed in.
 */
import type { CryptoProvider } from '../../src/crypto/provider.js'
import type { VectorCheckResult } from './ed25519-vectors.js'

interface Rfc4231Record {
  testCase: number
  key: string
  data: string
  hmacSha256: string
  truncatedToBits?: number
}

interface WycheproofMac {
  testGroups: {
    tagSize: number
    tests: {
      tcId: number
      comment: string
      key: string
      msg: string
      tag: string
      result: string
    }[]
  }[]
}

function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}

/**
 * RFC 4231 cases 1–7 (case 5 compares the published 128-bit prefix) and every Wycheproof
 * HMAC-SHA256 test: a `valid` tag equals the computed one (truncated to the group's tagSize),
 * an `invalid` one does not, both under `lib.constantTimeEqual`.
 */
export async function checkHmacVectors(
  provider: CryptoProvider,
  data: { rfc4231: unknown; wycheproof: unknown },
  lib: { constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean },
): Promise<VectorCheckResult[]> {
  const rfc: VectorCheckResult = { file: 'hmac-sha256-rfc4231.json', total: 0, failures: [] }
  for (const v of data.rfc4231 as Rfc4231Record[]) {
    rfc.total++
    try {
      const mac = await provider.hmacSha256(fromHex(v.key), fromHex(v.data))
      const expected = fromHex(v.hmacSha256)
      const got = v.truncatedToBits ? mac.subarray(0, v.truncatedToBits / 8) : mac
      if (mac.length !== 32 || !lib.constantTimeEqual(got, expected)) {
        rfc.failures.push(`test case ${v.testCase}: wrong MAC`)
      }
    } catch (e) {
      rfc.failures.push(`test case ${v.testCase}: threw ${String(e)}`)
    }
  }

  const wp: VectorCheckResult = { file: 'wycheproof-hmac_sha256_test.json', total: 0, failures: [] }
  for (const group of (data.wycheproof as WycheproofMac).testGroups) {
    for (const t of group.tests) {
      wp.total++
      try {
        const mac = await provider.hmacSha256(fromHex(t.key), fromHex(t.msg))
        const equal = lib.constantTimeEqual(mac.subarray(0, group.tagSize / 8), fromHex(t.tag))
        if (equal !== (t.result === 'valid')) {
          wp.failures.push(`tcId ${t.tcId} (${t.comment}): expected ${t.result}, equal=${equal}`)
        }
      } catch (e) {
        wp.failures.push(`tcId ${t.tcId}: threw ${String(e)}`)
      }
    }
  }
  return [rfc, wp]
}
