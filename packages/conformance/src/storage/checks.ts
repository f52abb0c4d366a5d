/**
 * The `Storage` checks, part one (plain assertions), and how they run without a test runner (a
 * browser page); `testStorage` runs each under vitest.
 */
import type { JsonValue, Storage } from '@agentmsg/core'
import { describeError } from '@agentmsg/core/http'
import { type CheckResult, checkList, equal, ok, rejects, runChecks } from '../assert.js'
import { addListChecks, keysOf, type StorageCheck } from './checks-list.js'

/** Every check, in order (with the persistence checks when `persistent`). */
export function storageChecks(persistent: boolean): Array<[string, StorageCheck]> {
  const [list, it] = checkList<StorageCheck>()
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
    const falsy = Object.entries({ null: null, zero: 0, false: false, empty: '' })
    for (const [key, value] of falsy) await storage.put(key, value)
    for (const [key, value] of falsy) equal(await storage.get(key), value)
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
    ['a cycle', cycle],
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
  addListChecks(it, persistent)
  return list
}

function cycle(): unknown {
  const o: Record<string, unknown> = {}
  o.self = o
  return o
}

/**
 * Run the contract checks (`only` these) on fresh empty stores from `factory`, reporting each;
 * with `reopen` (close `old`, open it again) the persistence checks too.
 * @example const results = await runStorageContract(() => memoryStorage())
 */
export function runStorageContract(
  factory: () => Promise<Storage> | Storage,
  options: { reopen?: (old: Storage) => Promise<Storage>; only?: readonly string[] } = {},
): Promise<CheckResult[]> {
  return runChecks(storageChecks(options.reopen !== undefined), options.only, async (check) => {
    let storage: Storage | undefined
    let closeError: Error | undefined
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
    } finally {
      try {
        await storage?.close?.()
      } catch (err) {
        // Reported only when the check itself passed.
        closeError = new Error(`close: ${describeError(err)}`)
      }
    }
    if (closeError) throw closeError
  })
}
