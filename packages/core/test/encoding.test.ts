import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { base58btcDecode, base58btcEncode } from '../src/base58.js'
import { base64Decode, base64Encode, base64urlDecode, base64urlEncode } from '../src/base64url.js'
import {
  concat,
  constantTimeEqual,
  hexDecode,
  hexEncode,
  randomBytes,
  utf8Decode,
  utf8Encode,
} from '../src/bytes.js'
import { isAgentMsgError } from '../src/errors.js'
import { checkEncodingVectors } from './shared/encoding-vectors.js'
import { readVectorJson, readVectorText } from './vectors.node.js'

const MULTIBASE_FILES = [
  'multibase-basic.csv',
  'multibase-leading_zero.csv',
  'multibase-two_leading_zeros.csv',
]

/** Expect `fn` to throw an AgentMsgError with code invalid_format. */
function expectInvalidFormat(fn: () => unknown, label: string) {
  let error: unknown
  try {
    fn()
  } catch (e) {
    error = e
  }
  expect(isAgentMsgError(error) && error.code === 'invalid_format', label).toBe(true)
}

describe('encoding vectors', () => {
  it('agrees with RFC 4648, RFC 7515, Bitcoin, draft-msporny-base58 and multibase', () => {
    const results = checkEncodingVectors(
      {
        base64urlEncode,
        base64urlDecode,
        base64Encode,
        base64Decode,
        base58btcEncode,
        base58btcDecode,
      },
      {
        rfc4648: readVectorJson('base64-rfc4648.json'),
        bitcoinBase58: readVectorJson('bitcoin-base58_encode_decode.json'),
        draftBase58: readVectorJson('base58-draft-msporny-base58-03.json'),
        multibase: Object.fromEntries(MULTIBASE_FILES.map((f) => [f, readVectorText(f)])),
      },
    )
    const totals = Object.fromEntries(results.map((r) => [r.file, r.total]))
    // RFC 4648: (7 §10 + 3 §9) × {base64, base64url} + 1 RFC 7515; one z and one u row per CSV.
    expect(totals).toEqual({
      'base64-rfc4648.json': 21,
      'bitcoin-base58_encode_decode.json': 21,
      'base58-draft-msporny-base58-03.json': 3,
      'multibase-basic.csv': 2,
      'multibase-leading_zero.csv': 2,
      'multibase-two_leading_zeros.csv': 2,
    })
    for (const r of results) expect(r.failures, r.file).toEqual([])
  })
})

describe('base64url', () => {
  it('round-trips any bytes and matches Node Buffer', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const text = base64urlEncode(bytes)
        expect(text).toBe(Buffer.from(bytes).toString('base64url'))
        expect(base64urlDecode(text)).toEqual(bytes)
      }),
    )
  })

  it.each([
    ['padding', 'AA=='],
    ['single padding', 'AAA='],
    ['space', 'AA AA'],
    ['leading whitespace', ' AAAA'],
    ['trailing newline', 'AAAA\n'],
    ['tab', 'AA\tAA'],
    ['standard alphabet +', 'A+AA'],
    ['standard alphabet /', 'A/AA'],
    ['length % 4 === 1', 'AAAAA'],
    ['single char', 'A'],
    ['non-zero trailing bits (1 byte)', 'AB'],
    ['non-zero trailing bits (2 bytes)', 'AAB'],
    ['non-ASCII', 'AAé'],
    ['fullwidth letter', 'AＡ'],
    ['dot', 'AA.A'],
  ])('refuses %s: %j', (label, text) => {
    expectInvalidFormat(() => base64urlDecode(text), label)
  })

  it('accepts the canonical neighbours of the refused texts', () => {
    expect(base64urlDecode('AA')).toEqual(new Uint8Array([0]))
    expect(base64urlDecode('AAA')).toEqual(new Uint8Array([0, 0]))
    expect(base64urlDecode('_-8')).toEqual(new Uint8Array([0xff, 0xef]))
    expect(base64urlDecode('')).toEqual(new Uint8Array())
  })

  it('names the field in the error', () => {
    expect(() => base64urlDecode('A', 'security.signatures[0].sig')).toThrow(
      /^security\.signatures\[0\]\.sig: /,
    )
  })
})

describe('base64 (standard, padded)', () => {
  it('round-trips any bytes and matches Node Buffer', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const text = base64Encode(bytes)
        expect(text).toBe(Buffer.from(bytes).toString('base64'))
        expect(base64Decode(text)).toEqual(bytes)
      }),
    )
  })

  it.each([
    ['missing padding', 'Zg'],
    ['short padding', 'Zg='],
    ['stray padding', 'Zm9v===='],
    ['padding in the middle', 'Zg==Zg=='],
    ['too much padding', 'Z==='],
    ['non-zero pad bits', 'Zh=='],
    ['non-zero pad bits (2 bytes)', 'Zm9='],
    ['url alphabet', 'A-z_'],
    ['whitespace', 'Zm9v '],
  ])('refuses %s: %j', (label, text) => {
    expectInvalidFormat(() => base64Decode(text), label)
  })

  it('lenient mode accepts missing padding and pad bits as RFC 8941 §4.2.7 asks', () => {
    expect(base64Decode('Zg', undefined, { lenient: true })).toEqual(utf8Encode('f'))
    expect(base64Decode('Zh==', undefined, { lenient: true })).toEqual(utf8Encode('f'))
    expectInvalidFormat(() => base64Decode('Z', undefined, { lenient: true }), 'length 1')
    expectInvalidFormat(() => base64Decode('Zm9v=', undefined, { lenient: true }), 'stray =')
    expectInvalidFormat(() => base64Decode('Zm$v', undefined, { lenient: true }), 'bad char')
  })
})

describe('bytes', () => {
  it('utf8Decode is fatal on invalid UTF-8 and keeps a BOM', () => {
    expect(utf8Decode(utf8Encode('héllo €'))).toBe('héllo €')
    expect(utf8Decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]))).toBe('\ufeffa')
    for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
      expectInvalidFormat(() => utf8Decode(new Uint8Array(bad)), `bytes ${bad}`)
    }
  })

  it('hex round-trips and refuses odd lengths and non-hex', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(hexEncode(bytes)).toBe(Buffer.from(bytes).toString('hex'))
        expect(hexDecode(hexEncode(bytes))).toEqual(bytes)
      }),
    )
    expect(hexDecode('ABcd')).toEqual(new Uint8Array([0xab, 0xcd]))
    for (const bad of ['abc', 'zz', '0x00', 'a ', 'ag'])
      expectInvalidFormat(() => hexDecode(bad), bad)
  })

  it('concat joins in order', () => {
    expect(concat([new Uint8Array([1]), new Uint8Array(), new Uint8Array([2, 3])])).toEqual(
      new Uint8Array([1, 2, 3]),
    )
    expect(concat([])).toEqual(new Uint8Array())
  })

  it('constantTimeEqual compares content and length', () => {
    fc.assert(
      fc.property(fc.uint8Array(), fc.uint8Array(), (a, b) => {
        expect(constantTimeEqual(a, b)).toBe(Buffer.from(a).equals(Buffer.from(b)))
        expect(constantTimeEqual(a, a.slice())).toBe(true)
      }),
    )
    const a = new Uint8Array(32)
    const b = a.slice()
    b[31] = 1
    expect(constantTimeEqual(a, b)).toBe(false)
    expect(constantTimeEqual(a, a.subarray(0, 31))).toBe(false)
  })

  it('randomBytes returns the asked length, also above the 65,536-byte WebCrypto limit', () => {
    expect(randomBytes(0)).toEqual(new Uint8Array())
    const big = randomBytes(100_000)
    expect(big.length).toBe(100_000)
    // The last chunk must be filled too: 34,464 zero bytes by chance is impossible.
    expect(big.subarray(65_536).some((x) => x !== 0)).toBe(true)
    expect(constantTimeEqual(randomBytes(32), randomBytes(32))).toBe(false)
  })
})
