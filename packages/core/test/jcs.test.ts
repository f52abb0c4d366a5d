import { runInNewContext } from 'node:vm'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalize, canonicalizeToBytes, canonicalSize } from '../src/jcs.js'
import { parseStrictJson } from '../src/strict-json.js'
import { checkJcsVectors, looseJson } from './shared/jcs-vectors.js'
import { readVectorJson, readVectorText } from './vectors.node.js'

/** The AgentMsgError thrown by `f`, or a failed expectation when it does not throw. */
function thrown(f: () => unknown): { code?: unknown; field?: unknown; message: string } {
  try {
    f()
  } catch (e) {
    return e as { code?: unknown; field?: unknown; message: string }
  }
  throw new Error('expected an error')
}

/** Strings with the characters JCS treats specially, plus arbitrary well-formed Unicode. */
const unit = fc.oneof(
  fc.constantFrom(
    '"',
    '\\',
    '/',
    '\u0000',
    '\b',
    '\u001f',
    '\u007f',
    '\u2028',
    'é',
    '€',
    '😀',
    ':',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
)
const jsonValue = fc.jsonValue({ stringUnit: unit, maxDepth: 6 })

describe('canonicalize: published vectors', () => {
  const results = checkJcsVectors(
    canonicalize,
    {
      testdata: readVectorJson('jcs-testdata.json'),
      appendixB: readVectorJson('jcs-rfc8785-appendix-b-numbers.json'),
      es6Lines: readVectorText('jcs-es6testfile-first10000.txt'),
    },
    {
      // The strict parser only takes objects at the top; wrapping keeps `arrays` checkable.
      parse: (text) => parseStrictJson(`{"v":${text}}`).v,
      parseRefuses: ['values'],
    },
  )
  const expectedTotals: Record<string, number> = {
    'jcs-testdata.json': 6,
    'jcs-rfc8785-appendix-b-numbers.json': 26,
    'jcs-es6testfile-first10000.txt': 10_000,
  }
  it.each(results)('$file: every record passes', ({ file, total, failures }) => {
    expect(failures).toEqual([])
    expect(total).toBe(expectedTotals[file])
  })
  it('checks all three files', () => {
    expect(results.map((r) => r.file).sort()).toEqual(Object.keys(expectedTotals).sort())
  })
})

describe('canonicalize: output', () => {
  it('sorts members by UTF-16 code units, not code points or locale', () => {
    // U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FB33 although its code point is higher.
    expect(canonicalize({ '\ufb33': 1, '\u{1f600}': 2, b: 3, B: 4, é: 5, '': 6 })).toBe(
      '{"":6,"B":4,"b":3,"é":5,"\u{1f600}":2,"\ufb33":1}',
    )
  })
  it('sorts recursively and keeps array order', () => {
    expect(canonicalize({ z: [3, 1, { y: 1, x: 2 }], a: {} })).toBe(
      '{"a":{},"z":[3,1,{"x":2,"y":1}]}',
    )
  })
  it('writes numbers as ECMAScript does, -0 as 0', () => {
    expect(canonicalize([-0, 1e21, 1e-7, 0.1, 100, 2.5e-5, -1.5])).toBe(
      '[0,1e+21,1e-7,0.1,100,0.000025,-1.5]',
    )
  })
  it('escapes exactly as RFC 8785: named escapes, lower-case \\u00xx, nothing else', () => {
    expect(canonicalize('"\\/\b\f\n\r\t\u0000\u001f\u007f\u2028é😀')).toBe(
      '"\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\u007f\u2028é😀"',
    )
    expect(canonicalize({ 'a\nb': 1 })).toBe('{"a\\nb":1}')
  })
  it('serialises scalars at the top level', () => {
    expect([null, true, false, 0, 'x'].map(canonicalize)).toEqual([
      'null',
      'true',
      'false',
      '0',
      '"x"',
    ])
  })
  it('accepts null-prototype objects and plain objects from another realm', () => {
    const bare = Object.assign(Object.create(null) as object, { b: 1, a: 2 })
    expect(canonicalize(bare)).toBe('{"a":2,"b":1}')
    expect(canonicalize(runInNewContext('({ b: [1], a: { c: null } })'))).toBe(
      '{"a":{"c":null},"b":[1]}',
    )
  })
  it('keeps a member named __proto__ as a member', () => {
    expect(canonicalize(JSON.parse('{"__proto__":{"x":1},"a":1}'))).toBe(
      '{"__proto__":{"x":1},"a":1}',
    )
  })
  it('ignores symbol-keyed and non-enumerable properties, as JSON.stringify does', () => {
    const o: Record<string | symbol, unknown> = { a: 1, [Symbol('s')]: 2 }
    Object.defineProperty(o, 'hidden', { value: 3, enumerable: false })
    expect(canonicalize(o)).toBe('{"a":1}')
  })
  it('canonicalizeToBytes is the UTF-8 of canonicalize', () => {
    const v = { b: 'é€😀', a: [1.5, null] }
    expect(canonicalizeToBytes(v)).toEqual(new TextEncoder().encode(canonicalize(v)))
    expect(Buffer.from(canonicalizeToBytes(v)).toString('hex')).toBe(
      '7b2261223a5b312e352c6e756c6c5d2c2262223a22c3a9e282acf09f9880227d',
    )
  })
  it('handles 512 levels of nesting', () => {
    let v: unknown = 1
    for (let i = 0; i < 512; i++) v = i % 2 ? [v] : { k: v }
    expect(canonicalize(v)).toContain('[{"k":[{"k":')
  })
})

describe('canonicalize: refusals', () => {
  class Point {
    x = 1
  }
  class Stamp {
    toJSON(): string {
      return 'stamp'
    }
  }
  const sparse: unknown[] = [1]
  sparse[2] = 3
  const cycle: Record<string, unknown> = { a: 1 }
  cycle.self = cycle
  const arrayCycle: unknown[] = [1]
  arrayCycle.push(arrayCycle)
  let tooDeep: unknown = 1
  for (let i = 0; i < 513; i++) tooDeep = [tooDeep]
  const cases: [string, unknown, RegExp][] = [
    ['NaN', NaN, /NaN is not a JSON number/],
    ['Infinity', Infinity, /Infinity is not a JSON number/],
    ['-Infinity', { a: -Infinity }, /-Infinity/],
    ['undefined', undefined, /undefined/],
    ['undefined member', { a: undefined }, /undefined/],
    ['undefined element', [undefined], /undefined/],
    ['array hole', sparse, /undefined/],
    ['function', { f: () => 1 }, /function/],
    ['symbol', [Symbol('x')], /symbol/],
    ['bigint', { n: 1n }, /bigint/],
    ['lone high surrogate', 'a\ud800b', /lone surrogate in string/],
    ['lone low surrogate', '\udc00', /lone surrogate in string/],
    ['reversed pair', '\ude00\ud83d', /lone surrogate in string/],
    ['lone surrogate in a member name', { '\ud800': 1 }, /lone surrogate in member name/],
    ['Date', { d: new Date(0) }, /Date object is not a plain object/],
    ['Map', new Map([['a', 1]]), /Map object/],
    ['Set', new Set([1]), /Set object/],
    ['class instance', { p: new Point() }, /Point object/],
    ['Uint8Array', { b: new Uint8Array(2) }, /Uint8Array object/],
    ['boxed string', { s: new String('x') }, /String object/],
    ['object with a toJSON method', { toJSON: () => 'x' }, /function/],
    ['class with toJSON', new Stamp(), /Stamp object/],
    ['object from another realm', runInNewContext('new Date(0)'), /Date object/],
    ['object cycle', cycle, /nesting deeper than 512 levels \(or a cycle\)/],
    ['array cycle', arrayCycle, /or a cycle/],
    ['513 levels', tooDeep, /nesting deeper than 512/],
  ]
  it.each(cases)('%s → invalid_format', (_name, value, message) => {
    const e = thrown(() => canonicalize(value))
    expect(e.code).toBe('invalid_format')
    expect(e.message).toMatch(message)
    expect(thrown(() => canonicalizeToBytes(value)).code).toBe('invalid_format')
  })
  it('names the offending path in `field`', () => {
    const e = thrown(() => canonicalize({ a: [1, { 'b c': { d: NaN } }] }))
    expect(e.field).toBe('a[1]["b c"].d')
    expect(e.message).toBe('a[1]["b c"].d: cannot canonicalize: NaN is not a JSON number')
    expect(thrown(() => canonicalize(NaN)).field).toBeUndefined()
  })
  it('does not call toJSON', () => {
    let called = false
    const v = Object.assign(Object.create(null) as object, {
      toJSON: () => {
        called = true
        return 1
      },
    })
    expect(thrown(() => canonicalize(v)).code).toBe('invalid_format')
    expect(called).toBe(false)
  })
})

describe('canonicalize: properties', () => {
  it('equals JSON.stringify on sorted input (the JCS definition for I-JSON data)', () => {
    const sortDeep = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(sortDeep)
      if (v === null || typeof v !== 'object') return v
      // fromEntries defines own properties, so a "__proto__" key stays a key (an assignment
      // would set the prototype instead: fast-check generates that key).
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sortDeep((v as Record<string, unknown>)[k])]),
      )
    }
    fc.assert(
      fc.property(jsonValue, (v) => {
        // Integer-like keys ("1") come first in any JS object whatever the insertion order, so
        // compare through an array of entries where that matters: JSON.stringify keeps arrays.
        const sorted = sortDeep(v)
        const hasIndexKeys = /"\d+":/.test(JSON.stringify(v))
        if (!hasIndexKeys) expect(canonicalize(v)).toBe(JSON.stringify(sorted))
      }),
      { numRuns: 300 },
    )
  })
  it('is idempotent: canonicalize(JSON.parse(canonicalize(v))) === canonicalize(v)', () => {
    fc.assert(
      fc.property(jsonValue, (v) => {
        const c = canonicalize(v)
        expect(canonicalize(JSON.parse(c))).toBe(c)
      }),
      { numRuns: 300 },
    )
  })
  it('gives one output for every way of writing the same value', () => {
    fc.assert(
      fc.property(jsonValue, fc.integer(), (v, seed) => {
        const text = looseJson(v, seed)
        expect(canonicalize(JSON.parse(text))).toBe(canonicalize(v))
      }),
      { numRuns: 300 },
    )
  })
})

describe('canonicalSize', () => {
  it('is the byte length of canonicalizeToBytes, ASCII or not', () => {
    for (const v of [
      { a: 'x' },
      { é: 'ü', k: '€ ☃' },
      ['𝄞', 'a\u0001"'],
      { n: 1e21, s: '\u07ff\u0800' },
    ]) {
      expect(canonicalSize(v)).toBe(canonicalizeToBytes(v).byteLength)
    }
    fc.assert(
      fc.property(jsonValue, (v) => {
        let bytes: Uint8Array
        try {
          bytes = canonicalizeToBytes(v)
        } catch {
          // A lone surrogate: refused by both.
          expect(() => canonicalSize(v)).toThrow(/lone surrogate/)
          return
        }
        expect(canonicalSize(v)).toBe(bytes.byteLength)
      }),
      { numRuns: 300 },
    )
  })
})
