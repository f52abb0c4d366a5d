/** The `Storage` checks, part two: `list`, abort signals, many keys, what survives a reopen. */

import type { JsonValue, Storage } from '@agentmsg/core'
import { describeError } from '@agentmsg/core/http'
import { equal, ok, rejects } from '../assert.js'

/** What each check gets: a fresh store, and `reopen` for persistent adapters. */
export type StorageCheck = (ctx: {
  storage: Storage
  reopen: () => Promise<Storage>
}) => Promise<void>

export const keysOf = (entries: Array<[string, JsonValue]>): string[] => entries.map(([k]) => k)

/** Registers the list, abort and persistence checks with `it`. */
export function addListChecks(
  it: (name: string, check: StorageCheck) => void,
  persistent: boolean,
): void {
  // Each `list` check starts from keys put out of order, across prefixes sharing characters.
  const test = (name: string, check: StorageCheck): void =>
    it(`list > ${name}`, async (ctx) => {
      for (const key of ['b/2', 'a/1', 'b/10', 'b/1', 'ab/1', 'b', 'b/3', 'c/1', 'b0']) {
        await ctx.storage.put(key, key)
      }
      await check(ctx)
    })
  const all = ['a/1', 'ab/1', 'b', 'b/1', 'b/10', 'b/2', 'b/3', 'b0', 'c/1']
  test('lists everything in ascending key order with the empty prefix', async ({ storage }) => {
    equal(keysOf(await storage.list('')), all)
  })
  test('lists only keys that start with the prefix, with their values', async ({ storage }) => {
    equal(await storage.list('b/'), [
      ['b/1', 'b/1'],
      ['b/10', 'b/10'],
      ['b/2', 'b/2'],
      ['b/3', 'b/3'],
    ])
    equal(keysOf(await storage.list('a')), ['a/1', 'ab/1'])
    equal(await storage.list('zzz'), [])
  })
  test('treats the prefix literally (no patterns)', async ({ storage }) => {
    await storage.put('x.y', 1)
    await storage.put('x%y', 2)
    await storage.put('x*y', 3)
    equal(await storage.list('x.'), [['x.y', 1]])
    equal(await storage.list('x*'), [['x*y', 3]])
  })
  test('honours limit', async ({ storage }) => {
    equal(keysOf(await storage.list('b/', { limit: 2 })), ['b/1', 'b/10'])
    equal(await storage.list('b/', { limit: 0 }), [])
    equal((await storage.list('b/', { limit: 100 })).length, 4)
  })
  test('honours after (strictly greater), also for keys that do not exist', async ({ storage }) => {
    equal(keysOf(await storage.list('b/', { after: 'b/10' })), ['b/2', 'b/3'])
    equal(keysOf(await storage.list('b/', { after: 'b/15' })), ['b/2', 'b/3'])
    equal((await storage.list('b/', { after: 'a' })).length, 4)
    equal(await storage.list('b/', { after: 'b/3' }), [])
    equal(await storage.list('b/', { after: 'z' }), [])
  })
  test('pages through with after + limit', async ({ storage }) => {
    const seen: string[] = []
    let after: string | undefined
    for (;;) {
      const page = await storage.list('', { limit: 2, ...(after === undefined ? {} : { after }) })
      if (page.length === 0) break
      seen.push(...keysOf(page))
      after = page[page.length - 1]![0]
    }
    equal(seen, all)
  })
  test('reflects deletes and later puts', async ({ storage }) => {
    await storage.delete('b/10')
    await storage.put('b/11', 'b/11')
    equal(keysOf(await storage.list('b/')), ['b/1', 'b/11', 'b/2', 'b/3'])
  })
  const a = 'abort > '
  it(`${a}rejects every method with the signal reason when already aborted`, async ({
    storage,
  }) => {
    await storage.put('a', 1)
    const reason = new Error('stop')
    const signal = AbortSignal.abort(reason)
    const same = (err: unknown): void => ok(err === reason, `rejected with ${describeError(err)}`)
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
}
