/**
 * `parseStrictJsonAsync` (issue 12: the exact parser imported on first need) gives the verdict
 * of `parseStrictJson` for every input: the same object, or the same error.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StrictJsonOptions } from '../src/strict-json/prepare.js'
import { INTEGER_MEMBERS } from '../src/strict-json/prepare.js'
import { parseStrictJson } from '../src/strict-json.js'
import { parseStrictJsonAsync } from '../src/strict-json-async.js'

const enc = (s: string) => new TextEncoder().encode(s)

async function sameVerdict(input: string | Uint8Array, options?: StrictJsonOptions) {
  let sync: unknown
  let syncError: unknown
  try {
    sync = parseStrictJson(input, options)
  } catch (e) {
    syncError = e
  }
  const asyncResult = await parseStrictJsonAsync(input, options).then(
    (v) => ({ v }),
    (e: unknown) => ({ e }),
  )
  if (syncError === undefined) expect(asyncResult).toEqual({ v: sync })
  else {
    expect('e' in asyncResult).toBe(true)
    const e = (asyncResult as { e: Error & { code?: string; field?: string } }).e
    const s = syncError as Error & { code?: string; field?: string }
    expect([e.constructor, e.code, e.message, e.field]).toEqual([
      s.constructor,
      s.code,
      s.message,
      s.field,
    ])
  }
}

const CASES = [
  '{"a":1}',
  '{"a":1,"a":2}',
  '{"a":"\\u0061","\\u0061":1}',
  '{"sequence":1.0}',
  '{"sequence":1e0}',
  '{"n":12345678901234567890}',
  '{"n":1e400}',
  '{"s":"\\ud800"}',
  '{"s":"a\\u003ab"}',
  '[1]',
  '{"a":1,}',
  '{"a":01}',
  '\ufeff{"a":1}',
  `${'{"a":'.repeat(70)}1${'}'.repeat(70)}`,
  '{"text":"grüße 🔐","parts":[{"type":"text"}]}',
  '',
  'null',
]

describe('parseStrictJsonAsync', () => {
  it.each(CASES)('agrees with parseStrictJson on %j (text and bytes)', async (text) => {
    await sameVerdict(text)
    await sameVerdict(enc(text), { integerMembers: INTEGER_MEMBERS })
    await sameVerdict(text, { integerMembers: INTEGER_MEMBERS, onNonInteger: 'mark' })
  })

  it('agrees on invalid UTF-8, a byte order mark, and bad options', async () => {
    await sameVerdict(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))
    await sameVerdict(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))
    await sameVerdict('{}', { maxDepth: 0 })
    await sameVerdict('{}', { onNonInteger: 'ignore' as never })
  })

  it('agrees on arbitrary JSON-like text', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.json(), fc.string()), async (text) => {
        await sameVerdict(text, { integerMembers: INTEGER_MEMBERS })
      }),
      { numRuns: 500 },
    )
  })
})
