/**
 * RFC 8785 vector checks that run anywhere: under vitest on Node and, bundled, in Chromium
 * against the built package. No file access here; the runner loads the three files of
 * `test/vectors` (README §2) and passes their contents in.
 */

/** The vector files' contents, as loaded by the runner. */
export interface JcsVectorData {
  /** `jcs-testdata.json`, parsed. */
  testdata: unknown
  /** `jcs-rfc8785-appendix-b-numbers.json`, parsed. */
  appendixB: unknown
  /** `jcs-es6testfile-first10000.txt`, as text. */
  es6Lines: string
}

/** The outcome for one vector file. */
export interface JcsVectorResult {
  file: string
  /** Records checked. */
  total: number
  /** One line per failed record; empty when all passed. */
  failures: string[]
}

/** Options for {@link checkJcsVectors}. */
export interface JcsVectorOptions {
  /**
   * A strict parser (e.g. `parseStrictJson`); when given, every testdata input is also parsed
   * with it and must canonicalise to the expected output.
   */
  parse?: (text: string) => unknown
  /**
   * Testdata records that `parse` must refuse with `invalid_format` instead. The JCS testdata is
   * plain JSON, not I-JSON: `values` holds `1E30`, an integer beyond 2^53 that PROFILE §1 refuses.
   */
  parseRefuses?: readonly string[]
}

interface TestdataRecord {
  name: string
  input: string
  expected: string
  expectedUtf8Hex: string
}

interface AppendixBRecord {
  ieee754Hex: string
  expected: string | null
  comment: string
  mustReject?: boolean
}

function toHex(bytes: Uint8Array): string {
  let out = ''
  for (const b of bytes) out += b.toString(16).padStart(2, '0')
  return out
}

/** The double whose IEEE 754 bits are `hex` (big-endian, left-padded to 16 digits). */
export function doubleFromHex(hex: string): number {
  const padded = hex.padStart(16, '0')
  const view = new DataView(new ArrayBuffer(8))
  view.setUint32(0, parseInt(padded.slice(0, 8), 16))
  view.setUint32(4, parseInt(padded.slice(8), 16))
  return view.getFloat64(0)
}

function attempt(f: () => string): { ok: true; value: string } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: f() }
  } catch (error) {
    return { ok: false, error }
  }
}

function describeError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return `${String(error)}${code === undefined ? '' : ` (code ${String(code)})`}`
}

function checkTestdata(
  canonicalize: (v: unknown) => string,
  records: TestdataRecord[],
  parse: ((text: string) => unknown) | undefined,
  parseRefuses: readonly string[],
): JcsVectorResult {
  const failures: string[] = []
  const encoder = new TextEncoder()
  for (const r of records) {
    const got = attempt(() => canonicalize(JSON.parse(r.input)))
    if (!got.ok) failures.push(`${r.name}: threw ${describeError(got.error)}`)
    else if (got.value !== r.expected) failures.push(`${r.name}: got ${got.value}`)
    else if (toHex(encoder.encode(got.value)) !== r.expectedUtf8Hex) {
      failures.push(`${r.name}: UTF-8 bytes differ from expectedUtf8Hex`)
    }
    if (parse) {
      const strict = attempt(() => canonicalize(parse(r.input)))
      if (parseRefuses.includes(r.name)) {
        if (strict.ok)
          failures.push(`${r.name} (strict parse): must be refused, got ${strict.value}`)
        else if ((strict.error as { code?: unknown } | null)?.code !== 'invalid_format') {
          failures.push(`${r.name} (strict parse): refused with ${describeError(strict.error)}`)
        }
      } else if (!strict.ok)
        failures.push(`${r.name} (strict parse): threw ${describeError(strict.error)}`)
      else if (strict.value !== r.expected)
        failures.push(`${r.name} (strict parse): got ${strict.value}`)
    }
  }
  return { file: 'jcs-testdata.json', total: records.length, failures }
}

function checkAppendixB(
  canonicalize: (v: unknown) => string,
  records: AppendixBRecord[],
): JcsVectorResult {
  const failures: string[] = []
  for (const r of records) {
    const label = `${r.ieee754Hex} (${r.comment || 'no comment'})`
    const got = attempt(() => canonicalize(doubleFromHex(r.ieee754Hex)))
    if (r.mustReject) {
      if (got.ok) failures.push(`${label}: must be refused, got ${got.value}`)
      else if ((got.error as { code?: unknown } | null)?.code !== 'invalid_format') {
        failures.push(`${label}: refused with ${describeError(got.error)}, not invalid_format`)
      }
    } else if (!got.ok) failures.push(`${label}: threw ${describeError(got.error)}`)
    else if (got.value !== r.expected)
      failures.push(`${label}: got ${got.value}, want ${r.expected}`)
  }
  return { file: 'jcs-rfc8785-appendix-b-numbers.json', total: records.length, failures }
}

function checkEs6(canonicalize: (v: unknown) => string, text: string): JcsVectorResult {
  const failures: string[] = []
  let total = 0
  for (const line of text.split('\n')) {
    if (line === '') continue
    total++
    const comma = line.indexOf(',')
    const hex = line.slice(0, comma)
    const expected = line.slice(comma + 1)
    const got = attempt(() => canonicalize(doubleFromHex(hex)))
    if (!got.ok) failures.push(`${hex}: threw ${describeError(got.error)}`)
    else if (got.value !== expected) failures.push(`${hex}: got ${got.value}, want ${expected}`)
    // A broken implementation could fail thousands of lines; a sample is enough to debug.
    if (failures.length >= 20) {
      failures.push('… stopped after 20 failures')
      break
    }
  }
  return { file: 'jcs-es6testfile-first10000.txt', total, failures }
}

/**
 * Check `canonicalize` against every record of the three JCS vector files. The caller asserts
 * that each result has no failures and that `total` matches the published record count
 * (6 testdata, 26 appendix B rows including 2 that must be refused, 10,000 ES6 lines).
 */
export function checkJcsVectors(
  canonicalize: (v: unknown) => string,
  data: JcsVectorData,
  options: JcsVectorOptions = {},
): JcsVectorResult[] {
  return [
    checkTestdata(
      canonicalize,
      data.testdata as TestdataRecord[],
      options.parse,
      options.parseRefuses ?? [],
    ),
    checkAppendixB(canonicalize, data.appendixB as AppendixBRecord[]),
    checkEs6(canonicalize, data.es6Lines),
  ]
}

/** Deterministic choices for {@link looseJson}, driven by a seed (e.g. from fast-check). */
function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = Math.imul(s ^ (s >>> 15), s | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WS = [' ', '\t', '\n', '\r']

/**
 * Another writer's JSON for `v`, for property tests of the canonical form and the strict parser: shuffled members, random whitespace, characters randomly
 * written as `\u` escapes (surrogate pairs as escaped pairs), integers sometimes as `5.0`/`50e-1`.
 */
export function looseJson(v: unknown, seed: number): string {
  const rand = rng(seed)
  const ws = () =>
    rand() < 0.3 ? (WS[Math.floor(rand() * 4)] as string).repeat(1 + Math.floor(rand() * 2)) : ''
  const str = (s: string) => {
    let out = '"'
    for (const ch of s) {
      const c = ch.codePointAt(0) as number
      if (ch === '"' || ch === '\\' || c < 0x20 || rand() < 0.1) {
        for (let i = 0; i < ch.length; i++) {
          const hex = ch.charCodeAt(i).toString(16).padStart(4, '0')
          out += '\\u' + (rand() < 0.5 ? hex : hex.toUpperCase())
        }
      } else out += ch
    }
    return out + '"'
  }
  const num = (n: number) => {
    const s = JSON.stringify(n)
    if (!Number.isInteger(n) || s.includes('e')) return s
    const r = rand()
    // `0` + `0e-1` would be `00e-1`, a leading zero JSON forbids.
    return r < 0.2 ? s + '.0' : r < 0.4 ? s + 'e0' : r < 0.5 && n !== 0 ? s + '0e-1' : s
  }
  const emit = (x: unknown): string => {
    if (typeof x === 'string') return str(x)
    if (typeof x === 'number') return num(x)
    if (x === null || typeof x === 'boolean') return String(x)
    if (Array.isArray(x)) return '[' + ws() + x.map((e) => emit(e) + ws()).join(',' + ws()) + ']'
    const keys = Object.keys(x as object)
    for (let i = keys.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1))
      ;[keys[i], keys[j]] = [keys[j] as string, keys[i] as string]
    }
    const members = keys.map(
      (k) => str(k) + ws() + ':' + ws() + emit((x as Record<string, unknown>)[k]) + ws(),
    )
    return '{' + ws() + members.join(',' + ws()) + '}'
  }
  return ws() + emit(v) + ws()
}
