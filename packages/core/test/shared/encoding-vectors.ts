/**
 * Encoding known-answer checks (base64, base64url, base58btc, multibase), runtime-agnostic (no
 * `node:` imports), shared by the Node and browser suites. The functions under test and the
 * vector files (parsed JSON, raw CSV text) are passed in.
 */
import type { VectorCheckResult } from './ed25519-vectors.js'

/** The encoding functions under test, as exported by `@agentmsg/core`. */
export interface EncodingLib {
  base64urlEncode(bytes: Uint8Array): string
  base64urlDecode(text: string): Uint8Array
  base64Encode(bytes: Uint8Array): string
  base64Decode(text: string): Uint8Array
  base58btcEncode(bytes: Uint8Array): string
  base58btcDecode(text: string): Uint8Array
}

/** Parsed and raw vector files. `multibase` maps a CSV file name to its text. */
export interface EncodingVectorData {
  rfc4648: unknown
  bitcoinBase58: unknown
  draftBase58: unknown
  multibase: Record<string, string>
}

interface Rfc4648 {
  section10: { inputHex: string; base64: string }[]
  section9: { inputHex: string; base64: string }[]
  rfc7515AppendixC: { inputHex: string; base64urlNoPad: string }[]
}

function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** Standard base64 → unpadded base64url, per RFC 4648 §5. */
const toUrl = (b64: string) => b64.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')

/**
 * Check `encode(bytes) === text` and `decode(text) === bytes`, recording a failure for either
 * (or a throw) under `label`.
 */
function roundTrip(
  result: VectorCheckResult,
  label: string,
  bytes: Uint8Array,
  text: string,
  encode: (b: Uint8Array) => string,
  decode: (t: string) => Uint8Array,
) {
  result.total++
  try {
    const enc = encode(bytes)
    if (enc !== text) result.failures.push(`${label}: encoded ${JSON.stringify(enc)}`)
    const dec = toHex(decode(text))
    if (dec !== toHex(bytes)) result.failures.push(`${label}: decoded ${dec}`)
  } catch (e) {
    result.failures.push(`${label}: threw ${String(e)}`)
  }
}

/** The input line of a multibase CSV: `encoding, "<text with \x00 escapes>"`. */
function parseMultibaseInput(line: string): Uint8Array {
  const m = /^encoding,\s*"(.*)"\s*$/.exec(line)
  if (!m) throw new Error(`bad multibase header ${line}`)
  const text = m[1]!.replace(/\\x([0-9a-fA-F]{2})/g, (_, h: string) =>
    String.fromCharCode(parseInt(h, 16)),
  )
  return Uint8Array.from(text, (c) => c.charCodeAt(0))
}

/**
 * RFC 4648 §10 and §9 (standard base64 and the same bytes as unpadded base64url), RFC 7515
 * Appendix C (base64url), Bitcoin Core and draft-msporny-base58 base58btc, and the `z`
 * (base58btc) and `u` (base64url) rows of the multibase CSVs.
 */
export function checkEncodingVectors(
  lib: EncodingLib,
  data: EncodingVectorData,
): VectorCheckResult[] {
  const rfc: VectorCheckResult = { file: 'base64-rfc4648.json', total: 0, failures: [] }
  const v = data.rfc4648 as Rfc4648
  for (const [section, rows] of [
    ['§10', v.section10],
    ['§9', v.section9],
  ] as const) {
    for (const r of rows) {
      const bytes = fromHex(r.inputHex)
      const label = `${section} ${r.inputHex || '(empty)'}`
      roundTrip(rfc, `${label} base64`, bytes, r.base64, lib.base64Encode, lib.base64Decode)
      roundTrip(
        rfc,
        `${label} base64url`,
        bytes,
        toUrl(r.base64),
        lib.base64urlEncode,
        lib.base64urlDecode,
      )
    }
  }
  for (const r of v.rfc7515AppendixC) {
    const bytes = fromHex(r.inputHex)
    roundTrip(
      rfc,
      `RFC 7515 ${r.inputHex}`,
      bytes,
      r.base64urlNoPad,
      lib.base64urlEncode,
      lib.base64urlDecode,
    )
  }

  const btc: VectorCheckResult = {
    file: 'bitcoin-base58_encode_decode.json',
    total: 0,
    failures: [],
  }
  for (const [hex, text] of data.bitcoinBase58 as [string, string][]) {
    roundTrip(btc, hex || '(empty)', fromHex(hex), text, lib.base58btcEncode, lib.base58btcDecode)
  }

  const draft: VectorCheckResult = {
    file: 'base58-draft-msporny-base58-03.json',
    total: 0,
    failures: [],
  }
  for (const r of data.draftBase58 as { inputHex: string; base58btc: string }[]) {
    roundTrip(
      draft,
      r.inputHex,
      fromHex(r.inputHex),
      r.base58btc,
      lib.base58btcEncode,
      lib.base58btcDecode,
    )
  }

  const results = [rfc, btc, draft]
  const prefixed = {
    base58btc: {
      prefix: 'z',
      encode: lib.base58btcEncode,
      decode: lib.base58btcDecode,
    },
    base64url: {
      prefix: 'u',
      encode: lib.base64urlEncode,
      decode: lib.base64urlDecode,
    },
  } as const
  for (const [file, csv] of Object.entries(data.multibase)) {
    const result: VectorCheckResult = { file, total: 0, failures: [] }
    const lines = csv.split(/\r?\n/).filter((l) => l.trim() !== '')
    const header = lines.shift() ?? ''
    // case_insensitivity.csv has a different header and no base58btc/base64url rows.
    if (!header.startsWith('encoding,')) continue
    const input = parseMultibaseInput(header)
    for (const line of lines) {
      const m = /^([a-z0-9]+),\s*"(.*)"\s*$/.exec(line)
      const codec = m && prefixed[m[1] as keyof typeof prefixed]
      if (!m || !codec) continue
      const text = m[2]!
      if (text[0] !== codec.prefix) {
        result.total++
        result.failures.push(`${m[1]}: unexpected prefix in ${text}`)
        continue
      }
      roundTrip(
        result,
        m[1]!,
        input,
        text,
        (b) => codec.prefix + codec.encode(b),
        (t) => codec.decode(t.slice(1)),
      )
    }
    results.push(result)
  }
  return results
}
