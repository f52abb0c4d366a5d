/**
 * PROFILE §1: integer fields are written without fraction or exponent. `parseStrictJson` with
 * `integerMembers` refuses (or, for envelopes, marks) `1.0`, `1e0`, … in the named members, on
 * both of its paths, and the receive pipeline's parse step refuses such a message.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalize } from '../src/jcs.js'
import { receive } from '../src/receive/pipeline.js'
import { nonIntegerLiteral } from '../src/strict-json/integers.js'
import { INTEGER_MEMBERS } from '../src/strict-json/prepare.js'
import { parseStrictJson } from '../src/strict-json.js'
import { context, verdict } from './receive-helpers.js'

const utf8 = (s: string) => new TextEncoder().encode(s)
const NOT_PLAIN = ['1.0', '1e0', '1E0', '10e-1', '1E+0', '0.1e1', '-0.0', '0e5', '1.5e1']

/** The error `f` throws; fails the test when it does not throw. */
function thrown(f: () => unknown): { code?: unknown; field?: unknown; message: string } {
  try {
    f()
  } catch (e) {
    return e as { code?: unknown; field?: unknown; message: string }
  }
  throw new Error('expected an error')
}

const strict = { integerMembers: INTEGER_MEMBERS }

/** I-JSON values whose nested members and strings often look like integer fields. */
const safeNumber = fc
  .oneof(fc.integer(), fc.double({ min: -1e15, max: 1e15, noNaN: true }))
  .map((n) => (n === 0 ? 0 : n))
const key = fc.oneof(fc.constantFrom(...INTEGER_MEMBERS), fc.string({ maxLength: 6 }))
const text = fc.oneof(fc.constantFrom('"sequence":1.0', 's\\u0073', ':'), fc.string())
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    fc.constant(null),
    safeNumber,
    text,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  ),
}))

describe('parseStrictJson integerMembers', () => {
  it.each(NOT_PLAIN)('refuses sequence written %s, from text and bytes, naming the field', (n) => {
    const text = `{"version":"1","sequence":${n},"body":{}}`
    for (const input of [text, utf8(text)]) {
      const e = thrown(() => parseStrictJson(input, strict))
      expect(e.code).toBe('invalid_format')
      expect(e.field).toBe('sequence')
      expect(e.message).toContain(`${n} is not an integer written without fraction or exponent`)
    }
    // Without the option the text is fine: the rule is the caller's to ask for.
    expect(parseStrictJson(text).sequence).toBe(Number(n))
  })

  it('refuses each integer field of PROFILE §1, and an escaped name', () => {
    for (const name of ['ttl_seconds', 'auth_level', 'agentmsg']) {
      expect(thrown(() => parseStrictJson(`{"${name}" : 3.0}`, strict)).field).toBe(name)
    }
    expect(thrown(() => parseStrictJson('{"seq\\u0075ence":1.0}', strict)).field).toBe('sequence')
  })

  it('accepts plain integers, and fractions anywhere else', () => {
    const text =
      '{"sequence":1,"ttl_seconds":86400,"auth_level":0,"n":1.0,' +
      '"body":{"parts":[{"type":"data","data":{"sequence":1.0,"agentmsg":5e0}}]},' +
      '"s":"\\"sequence\\":1.0","t":"\\u0073"}'
    const v = parseStrictJson(text, strict)
    expect(v).toEqual(JSON.parse(text))
    expect(nonIntegerLiteral(v)).toBeUndefined()
  })

  it('matches paths with * for envelopes, and marks instead of refusing when asked', () => {
    const frame = '{"type":"message","cursor":"c","message":{"sequence":1e0}}'
    const inFrame = { integerMembers: ['message.sequence'] }
    expect(thrown(() => parseStrictJson(frame, inFrame)).field).toBe('message.sequence')
    const page = '{"messages":[{"sequence":0},{"sequence":1.0,"ttl_seconds":2E1}],"cursor":null}'
    const inPage = { integerMembers: INTEGER_MEMBERS.map((m) => `messages.*.${m}`) }
    expect(thrown(() => parseStrictJson(page, inPage)).field).toBe('messages[1].sequence')

    const marked = parseStrictJson(page, { ...inPage, onNonInteger: 'mark' })
    expect(marked).toEqual(JSON.parse(page))
    const [good, bad] = marked.messages as unknown[]
    expect(nonIntegerLiteral(good)).toBeUndefined()
    expect(nonIntegerLiteral(bad)).toEqual({ member: 'sequence', literal: '1.0' })
    expect(nonIntegerLiteral(marked)).toBeUndefined()
  })

  it('shortens a long literal in the message', () => {
    const e = thrown(() => parseStrictJson(`{"sequence":1.${'0'.repeat(5000)}}`, strict))
    expect(e.message.length).toBeLessThan(200)
  })

  it('refuses malformed options', () => {
    for (const bad of [['a-b'], ['a.'], ['x.*'], ['']]) {
      expect(() => parseStrictJson('{}', { integerMembers: bad })).toThrow(RangeError)
    }
    const mode = { onNonInteger: 'warn' as 'mark' }
    expect(() => parseStrictJson('{}', mode)).toThrow(RangeError)
  })

  it('decides the same as the literal says, whatever surrounds it (both paths)', () => {
    const literal = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }).map(String),
      fc.constantFrom(...NOT_PLAIN),
    )
    const member = fc.constantFrom(...INTEGER_MEMBERS)
    const other = fc.dictionary(key, value, { maxKeys: 4 })
    fc.assert(
      fc.property(member, literal, other, fc.boolean(), (name, n, rest, escapeColon) => {
        // Integer fields nested anywhere may be fractions; at the top level only `name` is.
        // ":" is the lead's escaped member below: a second one would be a duplicate name.
        const others = Object.fromEntries(
          Object.entries(rest as object).filter(([k]) => !INTEGER_MEMBERS.includes(k) && k !== ':'),
        )
        const tail = canonicalize(others).slice(1)
        // An escaped colon sends the text to the exact parser instead of the fast path.
        const lead = escapeColon ? '{"\\u003a":0,' : '{'
        const json = `${lead}"${name}":${n}${tail === '}' ? '}' : `,${tail}`}`
        if (/^-?[0-9]+$/.test(n)) expect(parseStrictJson(json, strict)).toEqual(JSON.parse(json))
        else expect(thrown(() => parseStrictJson(json, strict)).field).toBe(name)
      }),
      { numRuns: 500 },
    )
  })
})

describe('receive: the parse step refuses a non-integer integer field', () => {
  it('in bytes, and in a value an envelope parser marked', async () => {
    const m = await signedMessage(await fixtureAgent(), 'bob')
    const text = JSON.stringify(m)
    expect(text).toContain('"sequence":0')
    for (const n of ['0.0', '0e0', '0E0', '0e-1']) {
      const body = utf8(text.replace('"sequence":0', `"sequence":${n}`))
      const result = await receive({ body }, context())
      expect(verdict(result)).toBe('parse:invalid_format')
      if (result.status === 'refused') expect(result.error.field).toBe('sequence')
    }
    const page = `{"messages":[${text.replace('"sequence":0', '"sequence":0.0')}]}`
    const inPage = INTEGER_MEMBERS.map((name) => `messages.*.${name}`)
    const marked = parseStrictJson(page, { integerMembers: inPage, onNonInteger: 'mark' })
    const result = await receive({ body: (marked.messages as unknown[])[0] }, context())
    expect(verdict(result)).toBe('parse:invalid_format')
    if (result.status === 'refused') {
      expect(result.error.field).toBe('sequence')
      expect(result.error.message).toMatch(/0\.0 is not an integer/)
    }
    expect(verdict(await receive({ body: utf8(text) }, context()))).toBe('accepted')
  })
})
