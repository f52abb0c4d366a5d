/**
 * Browser side of `storage-indexeddb.spec.ts`, against the BUILT `@agentmsg/storage-indexeddb`.
 *
 * First load: the shared Storage contract (`runStorageContract` of `@agentmsg/conformance`, the
 * checks `testStorage` runs under vitest) with reopen, then IndexedDB-specific checks, then it
 * writes a known state into the `reload` database and marks the tab (sessionStorage) so that the
 * load after `page.reload()` reads that state back instead.
 */
import { runStorageContract, type StorageCheckResult } from '@agentmsg/conformance/portable'
import type { JsonValue, Storage } from '@agentmsg/core'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'
import { publishResults } from './_page.js'

export type { StorageCheckResult }

export type StorageIndexedDbResults =
  | { phase: 'first'; contract: StorageCheckResult[]; extra: StorageCheckResult[] }
  | { phase: 'after-reload'; reload: StorageCheckResult[] }

const PHASE_KEY = 'agentmsg-idb-phase'
const RELOAD_DB = 'agentmsg-reload-test'
const RELOAD_STATE: Array<[string, JsonValue]> = [
  ['r/a', { nested: ['y', 2, null], s: 'héllo 𝄞' }],
  ['r/b', 'from batch'],
  ['r/c', 0],
]

let dbCounter = 0
const freshName = (): string => `contract-${++dbCounter}`

publishResults(async (): Promise<StorageIndexedDbResults> => {
  if (sessionStorage.getItem(PHASE_KEY) === 'written') {
    return { phase: 'after-reload', reload: await afterReload() }
  }
  const names = new Map<Storage, string>()
  const contract = await runStorageContract(
    async () => {
      const dbName = freshName()
      const storage = await indexedDbStorage({ dbName })
      names.set(storage, dbName)
      return storage
    },
    {
      reopen: async (old) => {
        const dbName = names.get(old) as string
        await old.close?.()
        const storage = await indexedDbStorage({ dbName })
        names.set(storage, dbName)
        return storage
      },
    },
  )
  const extra = await extraChecks()
  await writeForReload()
  sessionStorage.setItem(PHASE_KEY, 'written')
  return { phase: 'first', contract, extra }
})

async function check(
  results: StorageCheckResult[],
  name: string,
  body: () => Promise<void>,
): Promise<void> {
  try {
    await body()
    results.push({ name, ok: true })
  } catch (err) {
    results.push({
      name,
      ok: false,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    })
  }
}

function equal(actual: unknown, expected: unknown, what = 'value'): void {
  const a = JSON.stringify(actual)
  const e = JSON.stringify(expected)
  if (a !== e) throw new Error(`${what}: got ${a}, expected ${e}`)
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (err) {
    return err
  }
  throw new Error('expected a rejection')
}

const keys = async (s: Storage, prefix = ''): Promise<string[]> =>
  (await s.list(prefix)).map(([k]) => k)

/** Replace `IDBObjectStore.prototype.put` for the duration of `body`. */
async function withPatchedPut(
  patch: (original: IDBObjectStore['put']) => IDBObjectStore['put'],
  body: () => Promise<void>,
): Promise<void> {
  const original = IDBObjectStore.prototype.put
  IDBObjectStore.prototype.put = patch(original)
  try {
    await body()
  } finally {
    IDBObjectStore.prototype.put = original
  }
}

async function extraChecks(): Promise<StorageCheckResult[]> {
  const results: StorageCheckResult[] = []

  await check(
    results,
    'batch: a put that throws mid-transaction rolls back the earlier ops',
    async () => {
      const s = await indexedDbStorage({ dbName: freshName() })
      try {
        await s.batch([
          { type: 'put', key: 'keep', value: 'old' },
          { type: 'put', key: 'remove-me', value: 1 },
        ])
        const boom = new DOMException('simulated quota', 'QuotaExceededError')
        await withPatchedPut(
          (original) =>
            function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
              if (key === 'boom') throw boom
              return original.call(this, value, key)
            },
          async () => {
            const err = await rejection(
              s.batch([
                { type: 'put', key: 'keep', value: 'new' },
                { type: 'delete', key: 'remove-me' },
                { type: 'put', key: 'added', value: 1 },
                { type: 'put', key: 'boom', value: 2 },
                { type: 'put', key: 'after', value: 3 },
              ]),
            )
            if (err !== boom) throw new Error(`rejected with ${String(err)}, not the put's error`)
          },
        )
        equal(await s.list(''), [
          ['keep', 'old'],
          ['remove-me', 1],
        ])
      } finally {
        await s.close?.()
      }
    },
  )

  await check(
    results,
    'batch: an op that fails asynchronously (ConstraintError) rolls back',
    async () => {
      const s = await indexedDbStorage({ dbName: freshName() })
      try {
        await s.put('exists', 'old')
        // `add` instead of `put` for one key: its request fails in IndexedDB, after the earlier
        // requests of the same transaction have already run.
        await withPatchedPut(
          (original) =>
            function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
              if (key === 'exists') return this.add(value, key)
              return original.call(this, value, key)
            },
          async () => {
            const err = await rejection(
              s.batch([
                { type: 'put', key: 'a', value: 1 },
                { type: 'put', key: 'exists', value: 'new' },
                { type: 'put', key: 'b', value: 2 },
              ]),
            )
            equal((err as DOMException).name, 'ConstraintError', 'error name')
          },
        )
        equal(await s.list(''), [['exists', 'old']])
        // The storage keeps working after a failed transaction.
        await s.batch([{ type: 'put', key: 'a', value: 1 }])
        equal(await keys(s), ['a', 'exists'])
      } finally {
        await s.close?.()
      }
    },
  )

  await check(results, 'batch: aborting the signal while it runs applies nothing', async () => {
    const s = await indexedDbStorage({ dbName: freshName() })
    try {
      const controller = new AbortController()
      const reason = new Error('stop')
      const ops = Array.from({ length: 500 }, (_, i) => ({
        type: 'put' as const,
        key: `k/${i}`,
        value: i,
      }))
      const pending = s.batch(ops, { signal: controller.signal })
      controller.abort(reason)
      if ((await rejection(pending)) !== reason) throw new Error('not rejected with the reason')
      equal(await s.list(''), [])
    } finally {
      await s.close?.()
    }
  })

  await check(results, 'writes use durability strict and resolve after complete', async () => {
    const s = await indexedDbStorage({ dbName: freshName() })
    const original = IDBDatabase.prototype.transaction
    const seen: Array<{ mode: string; durability: string; done: () => boolean }> = []
    IDBDatabase.prototype.transaction = function (
      this: IDBDatabase,
      ...args: Parameters<IDBDatabase['transaction']>
    ) {
      const tx = original.apply(this, args)
      let complete = false
      tx.addEventListener('complete', () => (complete = true))
      seen.push({ mode: tx.mode, durability: tx.durability, done: () => complete })
      return tx
    }
    try {
      await s.put('a', 1)
      const put = seen.at(-1)
      if (!put) throw new Error('no transaction seen')
      equal([put.mode, put.durability, put.done()], ['readwrite', 'strict', true], 'put tx')
      await s.batch([{ type: 'delete', key: 'a' }])
      const batch = seen.at(-1)!
      equal([batch.mode, batch.durability, batch.done()], ['readwrite', 'strict', true], 'batch')
    } finally {
      IDBDatabase.prototype.transaction = original
      await s.close?.()
    }
  })

  await check(results, 'two storages with different dbNames are isolated', async () => {
    const one = await indexedDbStorage({ dbName: 'isolated-one' })
    const two = await indexedDbStorage({ dbName: 'isolated-two' })
    try {
      await one.put('shared', 'one')
      await two.put('shared', 'two')
      await one.batch([{ type: 'put', key: 'only-one', value: 1 }])
      equal(await one.get('shared'), 'one')
      equal(await two.get('shared'), 'two')
      equal(await one.list(''), [
        ['only-one', 1],
        ['shared', 'one'],
      ])
      equal(await two.list(''), [['shared', 'two']])
      await two.delete('shared')
      equal(await one.get('shared'), 'one')
      equal(await two.list(''), [])
      const dbs = (await indexedDB.databases()).map((d) => d.name)
      if (!dbs.includes('isolated-one') || !dbs.includes('isolated-two')) {
        throw new Error(`databases: ${JSON.stringify(dbs)}`)
      }
    } finally {
      await one.close?.()
      await two.close?.()
    }
  })

  await check(
    results,
    'stores of one database are isolated, and adding one does not break the other',
    async () => {
      const dbName = freshName()
      const first = await indexedDbStorage({ dbName, storeName: 'first' })
      await first.put('k', 'first')
      // Opening a second store upgrades the database: `first` must get out of the way
      // (versionchange) and reconnect on its next call.
      const second = await indexedDbStorage({ dbName, storeName: 'second' })
      try {
        await second.put('k', 'second')
        equal(await first.get('k'), 'first')
        await first.put('k2', 'first')
        equal(await keys(first), ['k', 'k2'])
        equal(await second.list(''), [['k', 'second']])
      } finally {
        await first.close?.()
        await second.close?.()
      }
    },
  )

  await check(
    results,
    'an open storage never blocks deleteDatabase, and reconnects after',
    async () => {
      const dbName = freshName()
      const s = await indexedDbStorage({ dbName })
      try {
        await s.put('a', 1)
        await new Promise<void>((resolve, reject) => {
          const request = indexedDB.deleteDatabase(dbName)
          request.onsuccess = () => resolve()
          request.onerror = () => reject(request.error)
          request.onblocked = () => reject(new Error('deleteDatabase was blocked'))
        })
        equal(await s.get('a'), undefined, 'after delete')
        await s.put('b', 2)
        equal(await s.list(''), [['b', 2]])
      } finally {
        await s.close?.()
      }
    },
  )

  await check(results, "list is exact around '\\uffff' and surrogate pairs", async () => {
    const s = await indexedDbStorage({ dbName: freshName() })
    try {
      const all = [
        'x',
        'x\uffff',
        'x\uffff\uffff',
        'x\uffffa',
        'x\ud834\udd1e',
        'xa',
        'y',
        '\uffff',
        '\uffff\uffff',
      ]
      await s.batch(all.map((key) => ({ type: 'put', key, value: key })))
      equal(await keys(s), [...all].sort(), 'all')
      for (const prefix of [
        'x',
        'x\uffff',
        'x\ud834',
        '\uffff',
        '\uffff\uffff',
        'x\uffff\uffff\uffff',
      ]) {
        const expected = [...all].sort().filter((k) => k.startsWith(prefix))
        equal(await keys(s, prefix), expected, `prefix ${JSON.stringify(prefix)}`)
      }
      equal(
        (await s.list('x', { after: 'x\uffff', limit: 2 })).map(([k]) => k),
        ['x\uffffa', 'x\uffff\uffff'],
        'after + limit',
      )
      equal(await s.list('x\uffff', { after: 'x\uffffb' }), [['x\uffff\uffff', 'x\uffff\uffff']])
      equal(await s.list('x\uffff', { after: 'x\uffff\uffff' }), [], 'after the last key')
    } finally {
      await s.close?.()
    }
  })

  await check(results, 'close() ends the storage: later calls reject', async () => {
    const s = await indexedDbStorage({ dbName: freshName() })
    await s.put('a', 1)
    await s.close?.()
    await s.close?.()
    await rejection(s.get('a'))
    await rejection(s.put('a', 2))
    const again = await indexedDbStorage({ dbName: `contract-${dbCounter}` })
    equal(await again.get('a'), 1)
    await again.close?.()
  })

  await check(results, 'non-JSON values are refused before IndexedDB sees them', async () => {
    const s = await indexedDbStorage({ dbName: freshName() })
    try {
      for (const bad of [
        new Uint8Array(2),
        new Blob(['x']),
        Object.create({ inherited: 1 }),
        // biome-ignore lint/suspicious/noSparseArray: a hole is the non-JSON value under test
        [, 1],
      ]) {
        const err = await rejection(s.put('bad', bad as unknown as JsonValue))
        if (!(err instanceof TypeError)) throw new Error(`not a TypeError: ${String(err)}`)
      }
      equal(await s.list(''), [])
    } finally {
      await s.close?.()
    }
  })

  return results
}

async function writeForReload(): Promise<void> {
  const s = await indexedDbStorage({ dbName: RELOAD_DB })
  await s.put('r/a', { nested: ['x'] })
  await s.put('r/gone', 1)
  await s.batch([
    { type: 'put', key: 'r/b', value: 'from batch' },
    { type: 'delete', key: 'r/gone' },
    { type: 'put', key: 'r/c', value: 0 },
  ])
  await s.put('r/a', RELOAD_STATE[0]![1])
  await rejection(
    s.batch([
      { type: 'put', key: 'r/a', value: 'never' },
      { type: 'put', key: 'r/bad', value: undefined as unknown as JsonValue },
    ]),
  )
  // Not closed on purpose: resolved writes must survive the page going away without close().
}

async function afterReload(): Promise<StorageCheckResult[]> {
  const results: StorageCheckResult[] = []
  await check(results, 'reload: puts, batches and deletes survived page.reload()', async () => {
    const s = await indexedDbStorage({ dbName: RELOAD_DB })
    try {
      equal(await s.list(''), RELOAD_STATE)
      equal(await s.get('r/gone'), undefined)
      equal(await s.get('r/bad'), undefined)
    } finally {
      await s.close?.()
    }
  })
  await check(
    results,
    'reload: the contract databases of the first load are still there',
    async () => {
      const names = (await indexedDB.databases()).map((d) => d.name ?? '')
      if (!names.includes('isolated-one') || !names.includes('isolated-two')) {
        throw new Error(`databases: ${JSON.stringify(names)}`)
      }
      const one = await indexedDbStorage({ dbName: 'isolated-one' })
      try {
        equal(await one.list(''), [
          ['only-one', 1],
          ['shared', 'one'],
        ])
      } finally {
        await one.close?.()
      }
    },
  )
  return results
}
