/**
 * The {@link Storage} conformance checks: plain assertions that run anywhere, including a
 * browser page (the IndexedDB adapter's Playwright suite). `storage-contract.ts` turns each
 * check into a vitest test, so both runners share this one list.
 */
import type { Storage } from '../../src/interfaces/storage.js'
import type { JsonValue } from '../../src/types.js'

/** The outcome of one check. */
export interface StorageCheckResult {
  name: string
  ok: boolean
  error?: string
}

/** Options for {@link runStorageContract}. */
export interface StorageContractCoreOptions {
  /** For persistent adapters: close `old` and open the same store again. */
  reopen?: (old: Storage) => Promise<Storage>
  /** Run only the checks with these names. */
  only?: readonly string[]
}

/** The names of the checks, in order (with the persistence checks when `persistent`). */
export function storageCheckNames(persistent: boolean): string[] {
  return checks(persistent).map(([name]) => name)
}

type Check = (ctx: { storage: Storage; reopen: () => Promise<Storage> }) => Promise<void>

/**
 * Run every contract check against a fresh store from `factory` (which must return an empty
 * store each call) and report each one; never throws for a failing check.
 */
export async function runStorageContract(
  factory: () => Promise<Storage> | Storage,
  options: StorageContractCoreOptions = {},
): Promise<StorageCheckResult[]> {
  const results: StorageCheckResult[] = []
  for (const [name, check] of checks(options.reopen !== undefined)) {
    if (options.only && !options.only.includes(name)) continue
    let storage: Storage | undefined
    try {
      storage = await factory()
      const ctx = {
        storage,
        reopen: async () => {
          if (!options.reopen || !storage) throw new Error('no reopen')
          storage = await options.reopen(storage)
          ctx.storage = storage
          return storage
        },
      }
      await check(ctx)
      results.push({ name, ok: true })
    } catch (err) {
      results.push({ name, ok: false, error: describe(err) })
    } finally {
      try {
        await storage?.close?.()
      } catch (err) {
        const last = results[results.length - 1]
        if (last?.ok) Object.assign(last, { ok: false, error: `close: ${describe(err)}` })
      }
    }
  }
  return results
}

function checks(persistent: boolean): Array<[string, Check]> {
  const list: Array<[string, Check]> = []
  const it = (name: string, check: Check): void => {
    list.push([name, check])
  }

  it('has a name', async ({ storage }) => {
    equal(typeof storage.name, 'string')
    ok(storage.name.length > 0, 'name is empty')
  })

  const g = 'get / put / delete > '
  it(`${g}returns undefined for a missing key`, async ({ storage }) => {
    equal(await storage.get('missing'), undefined)
    equal(await storage.get(''), undefined)
  })
  it(`${g}returns what was put`, async ({ storage }) => {
    await storage.put('a', { x: 1 })
    equal(await storage.get('a'), { x: 1 })
  })
  it(`${g}overwrites an existing key`, async ({ storage }) => {
    await storage.put('a', 1)
    await storage.put('a', 'two')
    equal(await storage.get('a'), 'two')
    equal(await storage.list(''), [['a', 'two']])
  })
  it(`${g}deletes a key, and deleting a missing key is not an error`, async ({ storage }) => {
    await storage.put('a', 1)
    await storage.delete('a')
    equal(await storage.get('a'), undefined)
    equal(await storage.delete('a'), undefined)
    equal(await storage.delete('never'), undefined)
  })
  it(`${g}can put a key again after deleting it`, async ({ storage }) => {
    await storage.put('a', 1)
    await storage.list('')
    await storage.delete('a')
    await storage.put('a', 2)
    equal(await storage.list(''), [['a', 2]])
  })
  it(`${g}stores null and falsy values as values, not as absence`, async ({ storage }) => {
    await storage.put('null', null)
    await storage.put('zero', 0)
    await storage.put('false', false)
    await storage.put('empty', '')
    equal(await storage.get('null'), null)
    equal(await storage.get('zero'), 0)
    equal(await storage.get('false'), false)
    equal(await storage.get('empty'), '')
    equal(keysOf(await storage.list('')), ['empty', 'false', 'null', 'zero'])
  })

  const j = 'JSON values > '
  const values: Array<[string, JsonValue]> = [
    ['string', 'héllo ☃ 𝄞 \u0000 "quoted"'],
    ['integer', 42],
    ['negative float', -1.5e-7],
    ['large number', Number.MAX_SAFE_INTEGER],
    ['true', true],
    ['empty object', {}],
    ['empty array', []],
    ['array', [1, 'two', null, false, [3], { four: 4 }]],
    [
      'nested object',
      { a: { b: { c: [1, { d: 'deep' }] } }, ключ: '值', 'with space': 1, '': 'empty key' },
    ],
  ]
  for (const [label, value] of values) {
    it(`${j}round-trips ${label}`, async ({ storage }) => {
      await storage.put('v', value)
      equal(await storage.get('v'), value)
      equal(await storage.list('v'), [['v', value]])
    })
  }
  it(`${j}keeps __proto__ as an ordinary member`, async ({ storage }) => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as JsonValue
    await storage.put('p', value)
    const back = (await storage.get('p')) as Record<string, unknown>
    equal(Object.keys(back).sort(), ['__proto__', 'x'])
    equal(({} as Record<string, unknown>).polluted, undefined)
    const proto = Object.getPrototypeOf(back) as object | null
    ok(proto === null || !('polluted' in proto), 'prototype was polluted')
  })
  it(`${j}accepts unicode keys and orders them by UTF-16 code units`, async ({ storage }) => {
    const keys = ['k/𝄞', 'k/ｚ', 'k/é', 'k/Z', 'k/a', 'k/ключ']
    for (const key of keys) await storage.put(key, key)
    const expected = [...keys].sort()
    ok(expected.indexOf('k/𝄞') < expected.indexOf('k/ｚ'), 'test premise: UTF-16 order')
    const listed = await storage.list('k/')
    equal(keysOf(listed), expected)
    for (const [k, v] of listed) equal(v, k)
    equal(await storage.get('k/𝄞'), 'k/𝄞')
  })
  const invalid: Array<[string, () => unknown]> = [
    ['undefined', () => undefined],
    ['a function', () => () => 1],
    ['a symbol', () => Symbol('s')],
    ['a bigint', () => 1n],
    ['NaN', () => NaN],
    ['Infinity', () => Infinity],
    ['a Date', () => new Date(0)],
    ['a Map', () => new Map()],
    ['undefined inside an object', () => ({ a: 1, b: undefined })],
    ['a function inside an array', () => [1, () => 2]],
    [
      'a cycle',
      () => {
        const o: Record<string, unknown> = {}
        o.self = o
        return o
      },
    ],
  ]
  for (const [label, make] of invalid) {
    it(`${j}refuses ${label} and keeps the old value`, async ({ storage }) => {
      await storage.put('bad', 'old')
      await rejects(storage.put('bad', make() as JsonValue))
      equal(await storage.get('bad'), 'old')
    })
  }

  const i = 'isolation > '
  it(`${i}is not affected by mutating the value after put`, async ({ storage }) => {
    const value = { list: [1, 2], inner: { x: 1 } }
    await storage.put('a', value)
    value.list.push(3)
    value.inner.x = 99
    equal(await storage.get('a'), { list: [1, 2], inner: { x: 1 } })
  })
  it(`${i}is not affected by mutating a value returned by get`, async ({ storage }) => {
    await storage.put('a', { list: [1, 2] })
    const got = (await storage.get('a')) as { list: number[] }
    got.list.push(3)
    equal(await storage.get('a'), { list: [1, 2] })
  })
  it(`${i}is not affected by mutating values returned by list`, async ({ storage }) => {
    await storage.put('a', { list: [1, 2] })
    const listed = (await storage.list('')) as Array<[string, { list: number[] }]>
    listed[0]![1].list.push(3)
    equal(await storage.get('a'), { list: [1, 2] })
  })
  it(`${i}is not affected by mutating a batch value after the batch`, async ({ storage }) => {
    const value = { n: 1 }
    await storage.batch([{ type: 'put', key: 'a', value }])
    value.n = 2
    equal(await storage.get('a'), { n: 1 })
  })

  const b = 'batch > '
  it(`${b}applies puts and deletes in order`, async ({ storage }) => {
    await storage.put('gone', 1)
    await storage.batch([
      { type: 'put', key: 'a', value: 1 },
      { type: 'put', key: 'b', value: 2 },
      { type: 'delete', key: 'gone' },
      { type: 'put', key: 'a', value: 3 },
      { type: 'put', key: 'c', value: 4 },
      { type: 'delete', key: 'c' },
    ])
    equal(await storage.list(''), [
      ['a', 3],
      ['b', 2],
    ])
  })
  it(`${b}accepts an empty batch`, async ({ storage }) => {
    equal(await storage.batch([]), undefined)
  })
  for (const [label, bad] of [
    ['undefined', undefined],
    ['a function', () => 1],
    ['a nested undefined', { a: undefined }],
  ] as Array<[string, unknown]>) {
    it(`${b}applies nothing when a later op's value is ${label}`, async ({ storage }) => {
      await storage.put('keep', 'old')
      await storage.put('remove-me', 'still here')
      await rejects(
        storage.batch([
          { type: 'put', key: 'keep', value: 'new' },
          { type: 'delete', key: 'remove-me' },
          { type: 'put', key: 'added', value: 1 },
          { type: 'put', key: 'bad', value: bad as JsonValue },
        ]),
      )
      equal(await storage.get('keep'), 'old')
      equal(await storage.get('remove-me'), 'still here')
      equal(await storage.get('added'), undefined)
      equal(await storage.get('bad'), undefined)
      equal(keysOf(await storage.list('')), ['keep', 'remove-me'])
    })
  }

  const l = 'list > '
  const seeded = (check: Check): Check => {
    return async (ctx) => {
      // Put out of order and across prefixes that share leading characters.
      for (const key of ['b/2', 'a/1', 'b/10', 'b/1', 'ab/1', 'b', 'b/3', 'c/1', 'b0']) {
        await ctx.storage.put(key, key)
      }
      await check(ctx)
    }
  }
  const all = ['a/1', 'ab/1', 'b', 'b/1', 'b/10', 'b/2', 'b/3', 'b0', 'c/1']
  it(
    `${l}lists everything in ascending key order with the empty prefix`,
    seeded(async ({ storage }) => {
      equal(keysOf(await storage.list('')), all)
    }),
  )
  it(
    `${l}lists only keys that start with the prefix, with their values`,
    seeded(async ({ storage }) => {
      equal(await storage.list('b/'), [
        ['b/1', 'b/1'],
        ['b/10', 'b/10'],
        ['b/2', 'b/2'],
        ['b/3', 'b/3'],
      ])
      equal(keysOf(await storage.list('a')), ['a/1', 'ab/1'])
      equal(await storage.list('zzz'), [])
    }),
  )
  it(
    `${l}treats the prefix literally (no patterns)`,
    seeded(async ({ storage }) => {
      await storage.put('x.y', 1)
      await storage.put('x%y', 2)
      await storage.put('x*y', 3)
      equal(await storage.list('x.'), [['x.y', 1]])
      equal(await storage.list('x*'), [['x*y', 3]])
    }),
  )
  it(
    `${l}honours limit`,
    seeded(async ({ storage }) => {
      equal(keysOf(await storage.list('b/', { limit: 2 })), ['b/1', 'b/10'])
      equal(await storage.list('b/', { limit: 0 }), [])
      equal((await storage.list('b/', { limit: 100 })).length, 4)
    }),
  )
  it(
    `${l}honours after (strictly greater), also for keys that do not exist`,
    seeded(async ({ storage }) => {
      equal(keysOf(await storage.list('b/', { after: 'b/10' })), ['b/2', 'b/3'])
      equal(keysOf(await storage.list('b/', { after: 'b/15' })), ['b/2', 'b/3'])
      equal((await storage.list('b/', { after: 'a' })).length, 4)
      equal(await storage.list('b/', { after: 'b/3' }), [])
      equal(await storage.list('b/', { after: 'z' }), [])
    }),
  )
  it(
    `${l}pages through with after + limit`,
    seeded(async ({ storage }) => {
      const seen: string[] = []
      let after: string | undefined
      for (;;) {
        const page = await storage.list('', { limit: 2, ...(after === undefined ? {} : { after }) })
        if (page.length === 0) break
        seen.push(...keysOf(page))
        after = page[page.length - 1]![0]
      }
      equal(seen, all)
    }),
  )
  it(
    `${l}reflects deletes and later puts`,
    seeded(async ({ storage }) => {
      await storage.delete('b/10')
      await storage.put('b/11', 'b/11')
      equal(keysOf(await storage.list('b/')), ['b/1', 'b/11', 'b/2', 'b/3'])
    }),
  )

  const a = 'abort > '
  it(`${a}rejects every method with the signal reason when already aborted`, async ({
    storage,
  }) => {
    await storage.put('a', 1)
    const reason = new Error('stop')
    const signal = AbortSignal.abort(reason)
    const same = (err: unknown): void => ok(err === reason, `rejected with ${describe(err)}`)
    same(await rejects(storage.get('a', { signal })))
    same(await rejects(storage.put('b', 2, { signal })))
    same(await rejects(storage.delete('a', { signal })))
    same(await rejects(storage.batch([{ type: 'put', key: 'c', value: 3 }], { signal })))
    same(await rejects(storage.list('', { signal })))
    // Nothing the aborted calls asked for happened.
    equal(await storage.list(''), [['a', 1]])
  })
  it(`${a}uses an AbortError reason for a plain abort()`, async ({ storage }) => {
    const controller = new AbortController()
    controller.abort()
    const err = await rejects(storage.get('a', { signal: controller.signal }))
    equal((err as { name?: unknown } | null)?.name, 'AbortError')
  })
  it(`${a}works normally with a signal that is not aborted`, async ({ storage }) => {
    const { signal } = new AbortController()
    await storage.put('a', 1, { signal })
    equal(await storage.get('a', { signal }), 1)
    equal(await storage.list('', { signal, limit: 1 }), [['a', 1]])
  })

  it('keeps many keys ordered', async ({ storage }) => {
    const n = 2000
    const keys = Array.from({ length: n }, (_, i) => `many/${((i * 7919) % n).toString(36)}`)
    await storage.batch(keys.slice(0, n / 2).map((key) => ({ type: 'put', key, value: key })))
    for (const key of keys.slice(n / 2)) await storage.put(key, key)
    equal(keysOf(await storage.list('many/')), [...keys].sort())
  })

  if (persistent) {
    const p = 'persistence > '
    it(`${p}keeps puts, batches and deletes across reopen`, async (ctx) => {
      await ctx.storage.put('p/a', { nested: ['x', 1, null] })
      await ctx.storage.put('p/gone', 1)
      await ctx.storage.batch([
        { type: 'put', key: 'p/b', value: 'b' },
        { type: 'delete', key: 'p/gone' },
      ])
      await ctx.storage.put('p/a', { nested: ['y'] })
      const storage = await ctx.reopen()
      equal(await storage.get('p/a'), { nested: ['y'] })
      equal(await storage.get('p/gone'), undefined)
      equal(await storage.list('p/'), [
        ['p/a', { nested: ['y'] }],
        ['p/b', 'b'],
      ])
    })
    it(`${p}does not persist a failed batch`, async (ctx) => {
      await ctx.storage.put('q', 'old')
      await rejects(
        ctx.storage.batch([
          { type: 'put', key: 'q', value: 'new' },
          { type: 'put', key: 'r', value: undefined as unknown as JsonValue },
        ]),
      )
      const storage = await ctx.reopen()
      equal(await storage.list(''), [['q', 'old']])
    })
  }
  return list
}

function keysOf(entries: Array<[string, JsonValue]>): string[] {
  return entries.map(([k]) => k)
}

function ok(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message)
}

/** Strict deep equality of JSON-ish values (vitest's `toStrictEqual` for what storage returns). */
function equal(actual: unknown, expected: unknown): void {
  const problem = difference(actual, expected, '$')
  if (problem) {
    throw new Error(`${problem}\n  actual:   ${show(actual)}\n  expected: ${show(expected)}`)
  }
}

function difference(actual: unknown, expected: unknown, path: string): string | undefined {
  if (Object.is(actual, expected)) return undefined
  if (
    typeof actual !== 'object' ||
    typeof expected !== 'object' ||
    actual === null ||
    expected === null
  ) {
    return `${path}: ${show(actual)} !== ${show(expected)}`
  }
  if (Array.isArray(actual) !== Array.isArray(expected)) return `${path}: array vs non-array`
  if (Object.getPrototypeOf(actual) !== Object.getPrototypeOf(expected)) {
    return `${path}: different prototypes`
  }
  const ak = Object.keys(actual)
  const ek = Object.keys(expected)
  if (ak.length !== ek.length || ak.some((k) => !Object.hasOwn(expected, k))) {
    return `${path}: keys ${show(ak)} !== ${show(ek)}`
  }
  for (const k of ek) {
    const d = difference(
      (actual as Record<string, unknown>)[k],
      (expected as Record<string, unknown>)[k],
      `${path}.${k}`,
    )
    if (d) return d
  }
  return undefined
}

/** Resolves with the rejection reason; throws if `promise` fulfils. */
async function rejects(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (err) {
    return err
  }
  throw new Error('expected a rejection, but the promise fulfilled')
}

function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err)
}
