import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalize } from '../src/jcs.js'
import { isIJsonSafeNumber } from '../src/strict-json/integers.js'
import { parseStrictJson } from '../src/strict-json.js'
import { looseJson } from './shared/jcs-vectors.js'

/** The error `f` throws; fails the test when it does not throw. */
function thrown(f: () => unknown): { code?: unknown; field?: unknown; message: string } {
  try {
    f()
  } catch (e) {
    return e as { code?: unknown; field?: unknown; message: string }
  }
  throw new Error('expected an error')
}

/** Expect `input` to be refused as invalid_format with a message matching `message`. */
function refuses(input: string | Uint8Array, message: RegExp, options?: { maxDepth?: number }) {
  const e = thrown(() => parseStrictJson(input, options))
  expect(e.code).toBe('invalid_format')
  expect(e.message).toMatch(message)
  return e
}

const bytes = (...b: number[]) => new Uint8Array(b)
const utf8 = (s: string) => new TextEncoder().encode(s)

/** `{"a":` + (depth−1) nested containers + `}`: the top-level object is depth 1. */
function nested(depth: number, open: '[' | '{"k":'): string {
  const close = open === '[' ? ']' : '}'
  return (
    '{"a":' + open.repeat(depth - 2) + (open === '[' ? '[]' : '{}') + close.repeat(depth - 2) + '}'
  )
}

describe('parseStrictJson: accepts', () => {
  it('returns the object for valid I-JSON, from a string or UTF-8 bytes', () => {
    const text = '{ "a" : [1, 1.5, -0, 0.1, true, false, null, "é😀"], "b": {"c": {}} }\n'
    const want = { a: [1, 1.5, -0, 0.1, true, false, null, 'é😀'], b: { c: {} } }
    expect(parseStrictJson(text)).toEqual(want)
    expect(parseStrictJson(utf8(text))).toEqual(want)
  })
  it.each([
    ['9007199254740991', 9007199254740991],
    ['-9007199254740991', -9007199254740991],
    ['9007199254740991.0', 9007199254740991],
    ['1.5', 1.5],
    ['0.1', 0.1],
    ['-0', -0],
    ['1e-400', 0],
    // biome-ignore lint/correctness/noPrecisionLoss: the parser must give the double JSON.parse gives
    ['1.7976931348623157e-308', 1.7976931348623157e-308],
    ['1E3', 1000],
    // biome-ignore lint/correctness/noPrecisionLoss: the parser must give the double JSON.parse gives
    ['123456789012345.678', 123456789012345.678],
  ])('number %s', (literal, value) => {
    expect(parseStrictJson(`{"n":${literal}}`).n).toBe(value)
  })
  it('accepts escaped and raw surrogate pairs', () => {
    expect(parseStrictJson('{"a":"\\ud83d\\ude00","\\uD83D\\uDE00":1}')).toEqual({
      a: '😀',
      '😀': 1,
    })
    expect(parseStrictJson('{"a":"\ud83d\ude00"}').a).toBe('😀')
    expect(parseStrictJson(utf8('{"a":"😀"}')).a).toBe('😀')
  })
  it('accepts nesting of exactly 64 levels, arrays and objects', () => {
    expect(() => parseStrictJson(nested(64, '['))).not.toThrow()
    expect(() => parseStrictJson(nested(64, '{"k":'))).not.toThrow()
    expect(() => parseStrictJson(nested(65, '['), { maxDepth: 65 })).not.toThrow()
  })
  it('keeps a member named __proto__ as an own member, not as the prototype', () => {
    const o = parseStrictJson('{"__proto__":{"polluted":1},"\\u0061\\u003a":2}')
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype)
    expect(Object.keys(o)).toEqual(['__proto__', 'a:'])
    expect((o as Record<string, unknown>).polluted).toBeUndefined()
  })
  it('unescapes every escape form', () => {
    expect(parseStrictJson('{"s":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20AC"}').s).toBe(
      '"\\/\b\f\n\r\t\u0041é€',
    )
  })
  it('allows only space, tab, LF and CR as whitespace', () => {
    expect(parseStrictJson(' \t\r\n{ \t\r\n"a" \t\r\n: \t\r\n1 \t\r\n} \t\r\n')).toEqual({ a: 1 })
  })
})

describe('parseStrictJson: refuses', () => {
  it.each([
    ['top level', '{"a":1,"a":2}', 'a'],
    ['nested', '{"x":{"b":[{"c":1,"c":1}]}}', 'x.b[0].c'],
    ['after unescaping', '{"a":1,"\\u0061":2}', 'a'],
    ['both escaped differently', '{"x":{"\\u00e9":1,"é":2}}', 'x["é"]'],
    ['same name, different values and types', '{"a":{"deep":[1,2]},"a":"x"}', 'a'],
  ])('duplicate member names: %s', (_name, text, field) => {
    const e = refuses(text, /duplicate member name/)
    expect(e.field).toBe(field)
    refuses(utf8(text), /duplicate member name/)
  })
  it('duplicates also when a string contains an escaped colon (exact parser path)', () => {
    refuses('{"t":"a\\u003ab","a":1,"a":1}', /duplicate member name "a" \(at offset 22\)/)
  })
  it.each([
    ['escaped high', '{"a":"\\ud800"}', /lone surrogate escape \\ud800/],
    ['escaped low', '{"a":"x\\uDC00"}', /lone surrogate escape \\uDC00/],
    ['escaped high then non-surrogate escape', '{"a":"\\ud800\\u0041"}', /lone surrogate escape/],
    ['escaped pair reversed', '{"a":"\\ude00\\ud83d"}', /lone surrogate escape/],
    ['escaped high before a raw pair', '{"a":"\\ud800\ud83d\ude00"}', /lone surrogate/],
    ['escaped in a member name', '{"\\ud800":1}', /lone surrogate escape/],
    ['raw high', '{"a":"\ud800"}', /lone surrogate in string/],
    ['raw low', '{"a":"\udc00x"}', /lone surrogate in string/],
    ['raw in a member name', '{"\ud800":1}', /lone surrogate in string/],
    ['escaped high and raw low', '{"a":"\\ud83d\ude00"}', /lone surrogate/],
    ['raw high and escaped low', '{"a":"\ud83d\\ude00"}', /lone surrogate/],
  ])('lone surrogates: %s', (_name, text, message) => {
    refuses(text, message)
  })
  it('lone surrogates encoded in bytes (CESU/WTF-8) as invalid UTF-8', () => {
    refuses(
      bytes(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d),
      /invalid UTF-8 sequence at byte 6/,
    )
  })
  it.each([
    ['truncated sequence', [0x7b, 0x22, 0xc3, 0x22, 0x3a, 0x31, 0x7d], 2],
    ['lone continuation byte', [0x7b, 0x80, 0x7d], 1],
    ['overlong', [0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d], 2],
    ['beyond U+10FFFF', [0x7b, 0x22, 0xf4, 0x90, 0x80, 0x80, 0x22, 0x3a, 0x31, 0x7d], 2],
    ['0xFF', [0x7b, 0x7d, 0xff], 2],
  ])('invalid UTF-8 bytes: %s', (_name, b, at) => {
    refuses(bytes(...b), new RegExp(`invalid UTF-8 sequence at byte ${at}$`))
  })
  it('a byte order mark, in bytes or as U+FEFF in a string', () => {
    refuses(bytes(0xef, 0xbb, 0xbf, 0x7b, 0x7d), /byte order mark/)
    refuses('\ufeff{}', /byte order mark/)
  })
  it('nesting of 65 levels, arrays and objects, and beyond a custom maxDepth', () => {
    refuses(nested(65, '['), /nesting deeper than 64 levels/)
    refuses(nested(65, '{"k":'), /nesting deeper than 64 levels/)
    refuses(nested(5, '['), /nesting deeper than 4 levels/, { maxDepth: 4 })
    refuses('{"a":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}', /nesting deeper than 64/)
    expect(() => parseStrictJson('{}', { maxDepth: 0 })).toThrow(RangeError)
    // A huge caller-chosen limit ends in invalid_format, not in a stack overflow.
    const deep = '{"a":' + '['.repeat(300_000) + ']'.repeat(300_000) + '}'
    refuses(deep, /nested too deeply to parse/, { maxDepth: 1e9 })
  })
  it.each([
    ['1e400', /overflows a double/],
    ['-1e400', /overflows a double/],
    ['12345678901234567890', /integer beyond/],
    ['-12345678901234567890', /integer beyond/],
    ['1e20', /integer beyond/],
    ['1.0e20', /integer beyond/],
    ['100000000000000000000.0', /integer beyond/],
    ['1.5e300', /integer beyond/],
    ['1.7976931348623157e308', /integer beyond/],
    ['9007199254740992', /number 9007199254740992 is an integer beyond ±\(2\^53−1\)/],
    ['-9007199254740992', /integer beyond/],
  ])('number %s', (literal, message) => {
    const e = refuses(`{"x":[0,{"n":${literal}}]}`, message)
    expect(e.field).toBe('x[1].n')
  })
  it.each([
    ['an array', '[1]', /top level must be an object, found an array/],
    ['a string', '"s"', /found a string/],
    ['a number', '1', /found a number/],
    ['a literal', 'null', /found a literal/],
    ['nothing', '', /found no value/],
    ['only whitespace', '  ', /found no value/],
  ])('a top level that is %s', (_name, text, message) => {
    refuses(text, message)
  })
  it.each([
    [
      'trailing comma in object',
      '{"a":1,}',
      /unexpected '}', expected a member name \(at offset 7\)/,
    ],
    ['trailing comma in array', '{"a":[1,]}', /unexpected '\]', expected a value/],
    ['comment', '{"a":1 /* c */}', /unexpected '\/'/],
    ['line comment', '{"a":1}// c', /after the top-level object/],
    ['single quotes', "{'a':1}", /unexpected "'", expected a member name/],
    ['unquoted name', '{a:1}', /expected a member name/],
    ['raw tab in string', '{"a":"\t"}', /raw control character U\+0009 in string/],
    ['raw newline in string', '{"a":"\n"}', /raw control character U\+000A/],
    ['raw NUL in string', '{"a":"\u0000"}', /raw control character U\+0000/],
    ['leading zero', '{"a":01}', /leading zero/],
    ['negative leading zero', '{"a":-01}', /leading zero/],
    ['plus sign', '{"a":+1}', /unexpected '\+'/],
    ['bare dot', '{"a":.5}', /unexpected '\.'/],
    ['trailing dot', '{"a":1.}', /invalid number/],
    ['empty exponent', '{"a":1e}', /invalid number/],
    ['hex', '{"a":0x1}', /unexpected 'x'/],
    ['NaN', '{"a":NaN}', /unexpected 'N'/],
    ['Infinity', '{"a":Infinity}', /unexpected 'I'/],
    ['bad literal', '{"a":tru}', /invalid literal/],
    ['upper-case literal', '{"a":True}', /unexpected 'T'/],
    ['bad escape', '{"a":"\\x41"}', /invalid escape \\x/],
    ['short \\u escape', '{"a":"\\u12"}', /four hex digits/],
    ['missing colon', '{"a" 1}', /unexpected '1', expected ':'/],
    ['missing comma', '{"a":[1 2]}', /expected ',' or '\]'/],
    ['unterminated string', '{"a":"abc', /unterminated string/],
    ['unterminated object', '{"a":1', /unterminated object/],
    ['unterminated array', '{"a":[1', /unterminated array/],
    ['trailing garbage', '{"a":1}x', /unexpected 'x' after the top-level object \(at offset 7\)/],
    ['second object', '{}{}', /after the top-level object/],
    ['non-breaking space', '{"a":\u00a01}', /unexpected U\+00A0/],
    ['form feed as whitespace', '{\f}', /unexpected U\+000C/],
    ['vertical tab as whitespace', '{"a":1\u000b}', /unexpected U\+000B/],
  ])('syntax: %s', (_name, text, message) => {
    refuses(text, message)
  })
  it('still refuses duplicates when Object.prototype has an enumerable property', () => {
    // One planted property per object would balance one dropped duplicate in a naive count.
    Object.defineProperty(Object.prototype, 'planted', {
      value: 1,
      enumerable: true,
      configurable: true,
      writable: true,
    })
    try {
      refuses('{"a":1,"a":2}', /duplicate member name "a"/)
      expect(Object.keys(parseStrictJson('{"a":{"b":1}}'))).toEqual(['a'])
    } finally {
      delete (Object.prototype as Record<string, unknown>).planted
    }
  })
  it('reports byte offsets for byte input', () => {
    refuses(utf8('{"é€":1}x'), /after the top-level object \(at byte 11\)/)
    refuses('{"é€":1}x', /\(at offset 8\)/)
  })
  it('every refusal is an AgentMsgError with code invalid_format', () => {
    const e = thrown(() => parseStrictJson('{"a":1,"a":2}'))
    expect(e).toMatchObject({ name: 'AgentMsgError', code: 'invalid_format', status: 400 })
  })
})

describe('isIJsonSafeNumber', () => {
  it('is true for finite numbers up to ±(2^53−1), fractions included', () => {
    for (const n of [0, -0, 1.5, 0.1, 5e-324, 9007199254740991, -9007199254740991]) {
      expect(isIJsonSafeNumber(n)).toBe(true)
    }
    for (const n of [
      9007199254740992,
      -9007199254740992,
      1e20,
      1.5e300,
      Infinity,
      -Infinity,
      NaN,
    ]) {
      expect(isIJsonSafeNumber(n)).toBe(false)
    }
  })
})

/** I-JSON values: safe numbers (no -0, which JSON text cannot keep apart from 0 after JCS). */
const safeNumber = fc
  .oneof(
    fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
    fc.double({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER, noNaN: true }),
  )
  .map((n) => (n === 0 ? 0 : n))
const unit = fc.oneof(
  fc.constantFrom('"', '\\', '\u0000', '\u001f', 'é', '😀', ':', '\u2028'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
)
const key = fc.string({ unit, maxLength: 6 })
const { ijson } = fc.letrec<{ ijson: unknown; object: Record<string, unknown> }>((tie) => ({
  ijson: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    fc.constant(null),
    fc.boolean(),
    safeNumber,
    fc.string({ unit, maxLength: 12 }),
    fc.array(tie('ijson'), { maxLength: 5 }),
    tie('object'),
  ),
  object: fc.dictionary(key, tie('ijson'), { maxKeys: 6 }),
}))
const ijsonObject = fc.dictionary(key, ijson, { maxKeys: 8 })

describe('parseStrictJson: properties', () => {
  it('parseStrictJson(canonicalize(v)) deep-equals v', () => {
    fc.assert(
      fc.property(ijsonObject, (v) => {
        expect(parseStrictJson(canonicalize(v))).toEqual(v)
        expect(parseStrictJson(new TextEncoder().encode(canonicalize(v)))).toEqual(v)
      }),
      { numRuns: 300 },
    )
  })
  it('accepts any writer’s form of an I-JSON object and agrees with JSON.parse', () => {
    fc.assert(
      fc.property(ijsonObject, fc.integer(), (v, seed) => {
        const text = looseJson(v, seed)
        expect(parseStrictJson(text)).toEqual(JSON.parse(text))
        expect(canonicalize(parseStrictJson(text))).toBe(canonicalize(v))
      }),
      { numRuns: 300 },
    )
  })
  it('refuses a duplicated member wherever it is', () => {
    // Repeat one member of some object inside the text: splice `,"k":value` after it.
    fc.assert(
      fc.property(ijsonObject, fc.nat(), fc.integer(), (v, pick, seed) => {
        const members: [string, string][] = []
        const collect = (x: unknown): void => {
          if (Array.isArray(x)) x.forEach(collect)
          else if (x !== null && typeof x === 'object') {
            for (const [k, e] of Object.entries(x)) {
              members.push([k, canonicalize(e)])
              collect(e)
            }
          }
        }
        collect(v)
        fc.pre(members.length > 0)
        const [k, value] = members[pick % members.length] as [string, string]
        const text = canonicalize(v)
        const member = JSON.stringify(k) + ':' + value
        // The member as written in its object: right after '{' or ',', which inside a string
        // literal could only appear before an escaped quote.
        let at = text.indexOf(member)
        while (text[at - 1] !== '{' && text[at - 1] !== ',') at = text.indexOf(member, at + 1)
        const dup =
          text.slice(0, at + member.length) +
          ',' +
          looseJson(k, seed) +
          ':0' +
          text.slice(at + member.length)
        const e = thrown(() => parseStrictJson(dup))
        expect(e.code).toBe('invalid_format')
        expect(e.message).toMatch(/duplicate member name/)
      }),
      { numRuns: 300 },
    )
  })
  it('never accepts what JSON.parse refuses, nor a value JSON.parse reads differently', () => {
    // Random single-character edits of valid text; half of the inputs carry an escaped colon,
    // which routes them through the exact parser instead of the JSON.parse fast path.
    const edit = fc.record({
      at: fc.nat(),
      op: fc.constantFrom('delete', 'insert', 'replace'),
      ch: fc.constantFrom(...'{}[]":,\\/ \t\n0123456789-+.eEtrufalsn\u00a0\ud800x'.split('')),
    })
    fc.assert(
      fc.property(
        ijsonObject,
        fc.boolean(),
        fc.array(edit, { minLength: 1, maxLength: 3 }),
        (v, exact, edits) => {
          let text = exact ? '{"\\u003a":0,' + canonicalize(v).slice(1) : canonicalize(v)
          if (text.endsWith(',}')) text = text.slice(0, -2) + '}'
          for (const { at, op, ch } of edits) {
            const i = at % (text.length + 1)
            text =
              op === 'delete'
                ? text.slice(0, i) + text.slice(i + 1)
                : text.slice(0, i) + ch + text.slice(i + (op === 'replace' ? 1 : 0))
          }
          let reference: unknown
          try {
            reference = JSON.parse(text)
          } catch {
            expect(thrown(() => parseStrictJson(text)).code).toBe('invalid_format')
            return
          }
          let got: unknown
          try {
            got = parseStrictJson(text)
          } catch (e) {
            // Valid JSON may still break an I-JSON rule; then it must be one of those.
            expect((e as { code?: unknown }).code).toBe('invalid_format')
            expect((e as Error).message).toMatch(
              /duplicate|surrogate|nesting|integer beyond|overflows|top level/,
            )
            return
          }
          expect(got).toEqual(reference)
        },
      ),
      { numRuns: 2000 },
    )
  })
})
