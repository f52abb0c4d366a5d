import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Storage } from '../../src/interfaces/storage.js'
import type { JsonValue } from '../../src/types.js'

/** Options for {@link testStorage}. */
export interface StorageContractOptions {
  /** For adapters that keep data across restarts: close `old` and open the same store again. */
  persistent?: { reopen: (old: Storage) => Promise<Storage> }
}

/**
 * The {@link Storage} conformance suite. Every adapter (memory, fs, IndexedDB, third-party) runs
 * it, so they all behave the same where the contract is precise: JSON in, equal JSON out; atomic
 * batches; ascending UTF-16 key order in `list`; non-JSON values refused; aborts honoured.
 *
 * `factory` must return an empty store each time it is called.
 *
 * @example
 * testStorage('memory', () => memoryStorage())
 * testStorage('fs', () => fsStorage({ dir: tmp() }), { persistent: { reopen: reopenFs } })
 */
export function testStorage(
  name: string,
  factory: () => Promise<Storage> | Storage,
  options: StorageContractOptions = {},
): void {
  describe(`Storage contract: ${name}`, () => {
    let storage: Storage

    beforeEach(async () => {
      storage = await factory()
    })

    afterEach(async () => {
      await storage.close?.()
    })

    it('has a name', () => {
      expect(typeof storage.name).toBe('string')
      expect(storage.name.length).toBeGreaterThan(0)
    })

    describe('get / put / delete', () => {
      it('returns undefined for a missing key', async () => {
        expect(await storage.get('missing')).toBeUndefined()
        expect(await storage.get('')).toBeUndefined()
      })

      it('returns what was put', async () => {
        await storage.put('a', { x: 1 })
        expect(await storage.get('a')).toEqual({ x: 1 })
      })

      it('overwrites an existing key', async () => {
        await storage.put('a', 1)
        await storage.put('a', 'two')
        expect(await storage.get('a')).toBe('two')
        expect(await storage.list('')).toEqual([['a', 'two']])
      })

      it('deletes a key, and deleting a missing key is not an error', async () => {
        await storage.put('a', 1)
        await storage.delete('a')
        expect(await storage.get('a')).toBeUndefined()
        await expect(storage.delete('a')).resolves.toBeUndefined()
        await expect(storage.delete('never')).resolves.toBeUndefined()
      })

      it('can put a key again after deleting it', async () => {
        await storage.put('a', 1)
        await storage.list('')
        await storage.delete('a')
        await storage.put('a', 2)
        expect(await storage.list('')).toEqual([['a', 2]])
      })

      it('stores null and falsy values as values, not as absence', async () => {
        await storage.put('null', null)
        await storage.put('zero', 0)
        await storage.put('false', false)
        await storage.put('empty', '')
        expect(await storage.get('null')).toBeNull()
        expect(await storage.get('zero')).toBe(0)
        expect(await storage.get('false')).toBe(false)
        expect(await storage.get('empty')).toBe('')
        expect((await storage.list('')).map(([k]) => k)).toEqual(['empty', 'false', 'null', 'zero'])
      })
    })

    describe('JSON values', () => {
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
        it(`round-trips ${label}`, async () => {
          await storage.put('v', value)
          expect(await storage.get('v')).toStrictEqual(value)
          expect(await storage.list('v')).toStrictEqual([['v', value]])
        })
      }

      it('keeps __proto__ as an ordinary member', async () => {
        const value = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as JsonValue
        await storage.put('p', value)
        const back = (await storage.get('p')) as Record<string, unknown>
        expect(Object.keys(back).sort()).toEqual(['__proto__', 'x'])
        expect(({} as Record<string, unknown>).polluted).toBeUndefined()
        expect(Object.getPrototypeOf(back)).not.toHaveProperty('polluted')
      })

      it('accepts unicode keys and orders them by UTF-16 code units', async () => {
        // 'ｚ' (U+FF5A) sorts before '𝄞' (U+1D11E = D834 DD1E) in UTF-16 order, after it in
        // code point order: adapters must use the former, as JavaScript's `<` does.
        const keys = ['k/𝄞', 'k/ｚ', 'k/é', 'k/Z', 'k/a', 'k/ключ']
        for (const key of keys) await storage.put(key, key)
        const expected = [...keys].sort()
        expect(expected.indexOf('k/𝄞')).toBeLessThan(expected.indexOf('k/ｚ'))
        const listed = await storage.list('k/')
        expect(listed.map(([k]) => k)).toEqual(expected)
        for (const [k, v] of listed) expect(v).toBe(k)
        expect(await storage.get('k/𝄞')).toBe('k/𝄞')
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
        it(`refuses ${label} and keeps the old value`, async () => {
          await storage.put('bad', 'old')
          await expect(storage.put('bad', make() as JsonValue)).rejects.toThrow()
          expect(await storage.get('bad')).toBe('old')
        })
      }
    })

    describe('isolation', () => {
      it('is not affected by mutating the value after put', async () => {
        const value = { list: [1, 2], inner: { x: 1 } }
        await storage.put('a', value)
        value.list.push(3)
        value.inner.x = 99
        expect(await storage.get('a')).toEqual({ list: [1, 2], inner: { x: 1 } })
      })

      it('is not affected by mutating a value returned by get', async () => {
        await storage.put('a', { list: [1, 2] })
        const got = (await storage.get('a')) as { list: number[] }
        got.list.push(3)
        expect(await storage.get('a')).toEqual({ list: [1, 2] })
      })

      it('is not affected by mutating values returned by list', async () => {
        await storage.put('a', { list: [1, 2] })
        const listed = (await storage.list('')) as Array<[string, { list: number[] }]>
        listed[0]![1].list.push(3)
        expect(await storage.get('a')).toEqual({ list: [1, 2] })
      })

      it('is not affected by mutating a batch value after the batch', async () => {
        const value = { n: 1 }
        await storage.batch([{ type: 'put', key: 'a', value }])
        value.n = 2
        expect(await storage.get('a')).toEqual({ n: 1 })
      })
    })

    describe('batch', () => {
      it('applies puts and deletes in order', async () => {
        await storage.put('gone', 1)
        await storage.batch([
          { type: 'put', key: 'a', value: 1 },
          { type: 'put', key: 'b', value: 2 },
          { type: 'delete', key: 'gone' },
          { type: 'put', key: 'a', value: 3 },
          { type: 'put', key: 'c', value: 4 },
          { type: 'delete', key: 'c' },
        ])
        expect(await storage.list('')).toEqual([
          ['a', 3],
          ['b', 2],
        ])
      })

      it('accepts an empty batch', async () => {
        await expect(storage.batch([])).resolves.toBeUndefined()
      })

      for (const [label, bad] of [
        ['undefined', undefined],
        ['a function', () => 1],
        ['a nested undefined', { a: undefined }],
      ] as Array<[string, unknown]>) {
        it(`applies nothing when a later op's value is ${label}`, async () => {
          await storage.put('keep', 'old')
          await storage.put('remove-me', 'still here')
          await expect(
            storage.batch([
              { type: 'put', key: 'keep', value: 'new' },
              { type: 'delete', key: 'remove-me' },
              { type: 'put', key: 'added', value: 1 },
              { type: 'put', key: 'bad', value: bad as JsonValue },
            ]),
          ).rejects.toThrow()
          expect(await storage.get('keep')).toBe('old')
          expect(await storage.get('remove-me')).toBe('still here')
          expect(await storage.get('added')).toBeUndefined()
          expect(await storage.get('bad')).toBeUndefined()
          expect((await storage.list('')).map(([k]) => k)).toEqual(['keep', 'remove-me'])
        })
      }
    })

    describe('list', () => {
      beforeEach(async () => {
        // Put out of order and across prefixes that share leading characters.
        for (const key of ['b/2', 'a/1', 'b/10', 'b/1', 'ab/1', 'b', 'b/3', 'c/1', 'b0']) {
          await storage.put(key, key)
        }
      })

      it('lists everything in ascending key order with the empty prefix', async () => {
        const keys = (await storage.list('')).map(([k]) => k)
        expect(keys).toEqual(['a/1', 'ab/1', 'b', 'b/1', 'b/10', 'b/2', 'b/3', 'b0', 'c/1'])
      })

      it('lists only keys that start with the prefix, with their values', async () => {
        expect(await storage.list('b/')).toEqual([
          ['b/1', 'b/1'],
          ['b/10', 'b/10'],
          ['b/2', 'b/2'],
          ['b/3', 'b/3'],
        ])
        expect((await storage.list('a')).map(([k]) => k)).toEqual(['a/1', 'ab/1'])
        expect(await storage.list('zzz')).toEqual([])
      })

      it('treats the prefix literally (no patterns)', async () => {
        await storage.put('x.y', 1)
        await storage.put('x%y', 2)
        await storage.put('x*y', 3)
        expect(await storage.list('x.')).toEqual([['x.y', 1]])
        expect(await storage.list('x*')).toEqual([['x*y', 3]])
      })

      it('honours limit', async () => {
        expect((await storage.list('b/', { limit: 2 })).map(([k]) => k)).toEqual(['b/1', 'b/10'])
        expect(await storage.list('b/', { limit: 0 })).toEqual([])
        expect(await storage.list('b/', { limit: 100 })).toHaveLength(4)
      })

      it('honours after (strictly greater), also for keys that do not exist', async () => {
        expect((await storage.list('b/', { after: 'b/10' })).map(([k]) => k)).toEqual([
          'b/2',
          'b/3',
        ])
        expect((await storage.list('b/', { after: 'b/15' })).map(([k]) => k)).toEqual([
          'b/2',
          'b/3',
        ])
        expect((await storage.list('b/', { after: 'a' })).map(([k]) => k)).toHaveLength(4)
        expect(await storage.list('b/', { after: 'b/3' })).toEqual([])
        expect(await storage.list('b/', { after: 'z' })).toEqual([])
      })

      it('pages through with after + limit', async () => {
        const seen: string[] = []
        let after: string | undefined
        for (;;) {
          const page = await storage.list('', {
            limit: 2,
            ...(after === undefined ? {} : { after }),
          })
          if (page.length === 0) break
          seen.push(...page.map(([k]) => k))
          after = page[page.length - 1]![0]
        }
        expect(seen).toEqual(['a/1', 'ab/1', 'b', 'b/1', 'b/10', 'b/2', 'b/3', 'b0', 'c/1'])
      })

      it('reflects deletes and later puts', async () => {
        await storage.delete('b/10')
        await storage.put('b/11', 'b/11')
        expect((await storage.list('b/')).map(([k]) => k)).toEqual(['b/1', 'b/11', 'b/2', 'b/3'])
      })
    })

    describe('abort', () => {
      it('rejects every method with the signal reason when already aborted', async () => {
        await storage.put('a', 1)
        const reason = new Error('stop')
        const signal = AbortSignal.abort(reason)
        await expect(storage.get('a', { signal })).rejects.toBe(reason)
        await expect(storage.put('b', 2, { signal })).rejects.toBe(reason)
        await expect(storage.delete('a', { signal })).rejects.toBe(reason)
        await expect(storage.batch([{ type: 'put', key: 'c', value: 3 }], { signal })).rejects.toBe(
          reason,
        )
        await expect(storage.list('', { signal })).rejects.toBe(reason)
        // Nothing the aborted calls asked for happened.
        expect(await storage.list('')).toEqual([['a', 1]])
      })

      it('uses an AbortError reason for a plain abort()', async () => {
        const controller = new AbortController()
        controller.abort()
        await expect(storage.get('a', { signal: controller.signal })).rejects.toMatchObject({
          name: 'AbortError',
        })
      })

      it('works normally with a signal that is not aborted', async () => {
        const { signal } = new AbortController()
        await storage.put('a', 1, { signal })
        expect(await storage.get('a', { signal })).toBe(1)
        expect(await storage.list('', { signal, limit: 1 })).toEqual([['a', 1]])
      })
    })

    it('keeps many keys ordered', async () => {
      const n = 2000
      const keys = Array.from({ length: n }, (_, i) => `many/${((i * 7919) % n).toString(36)}`)
      await storage.batch(keys.slice(0, n / 2).map((key) => ({ type: 'put', key, value: key })))
      for (const key of keys.slice(n / 2)) await storage.put(key, key)
      const listed = (await storage.list('many/')).map(([k]) => k)
      expect(listed).toEqual([...keys].sort())
    })

    const persistent = options.persistent
    if (persistent) {
      describe('persistence', () => {
        it('keeps puts, batches and deletes across reopen', async () => {
          await storage.put('p/a', { nested: ['x', 1, null] })
          await storage.put('p/gone', 1)
          await storage.batch([
            { type: 'put', key: 'p/b', value: 'b' },
            { type: 'delete', key: 'p/gone' },
          ])
          await storage.put('p/a', { nested: ['y'] })
          storage = await persistent.reopen(storage)
          expect(await storage.get('p/a')).toEqual({ nested: ['y'] })
          expect(await storage.get('p/gone')).toBeUndefined()
          expect(await storage.list('p/')).toEqual([
            ['p/a', { nested: ['y'] }],
            ['p/b', 'b'],
          ])
        })

        it('does not persist a failed batch', async () => {
          await storage.put('q', 'old')
          await expect(
            storage.batch([
              { type: 'put', key: 'q', value: 'new' },
              { type: 'put', key: 'r', value: undefined as unknown as JsonValue },
            ]),
          ).rejects.toThrow()
          storage = await persistent.reopen(storage)
          expect(await storage.list('')).toEqual([['q', 'old']])
        })
      })
    }
  })
}
