/**
 * `@agentmsg/storage-indexeddb`: the agentmsg {@link Storage} contract on IndexedDB, for
 * browsers. One object store keyed by string; every write waits for its transaction's
 * `complete` event with `durability: 'strict'`, and `batch` is one transaction.
 *
 * @packageDocumentation
 */
import type {
  AbortOptions,
  JsonValue,
  Storage,
  StorageListOptions,
  StorageOp,
} from '@agentmsg/core'
import { checkKey, cloneJson, prefixEnd } from './_json.js'
import { openStore } from './_open.js'

/** Options for {@link indexedDbStorage}. */
export interface IndexedDbStorageOptions {
  /**
   * The IndexedDB database. Stores with different names never see each other's keys.
   * @default 'agentmsg'
   */
  dbName?: string
  /**
   * The object store inside the database. Several stores may share one database; opening a new
   * one upgrades the database, and other open storages reconnect on their own.
   * @default 'kv'
   */
  storeName?: string
  /**
   * The IndexedDB implementation, for tests or runtimes without a global one (for example
   * `fake-indexeddb` on Node; pass its `IDBKeyRange` too).
   * @default globalThis.indexedDB
   */
  indexedDB?: IDBFactory
  /**
   * The `IDBKeyRange` that belongs to {@link IndexedDbStorageOptions.indexedDB}.
   * @default globalThis.IDBKeyRange
   */
  IDBKeyRange?: typeof IDBKeyRange
}

/**
 * Open (creating if needed) a {@link Storage} in IndexedDB.
 *
 * - Values must be JSON; anything else (`undefined` anywhere, `NaN`, a `Date`, a cycle) is
 *   refused with a `TypeError` before IndexedDB is touched, as every agentmsg adapter does.
 *   Values are copied on the way in and structured-cloned on the way out.
 * - A write resolves once its transaction has committed (`complete`, `durability: 'strict'`).
 * - `batch` validates every op first, then applies them all in one `readwrite` transaction;
 *   any failure aborts the transaction, so none of the ops is visible.
 * - `list` reads a key range in IndexedDB's own order, which is UTF-16 code unit order, the same
 *   as JavaScript's `<`.
 * - When another connection upgrades or deletes the database, this one closes at once (so it
 *   never blocks the other) and reconnects on its next operation. `close()` ends it for good.
 *
 * @example
 * const storage = await indexedDbStorage({ dbName: 'my-agent' })
 * await storage.put('contacts/bob', { pinned: true })
 * await storage.list('contacts/') // [['contacts/bob', { pinned: true }]]
 */
export async function indexedDbStorage(options: IndexedDbStorageOptions = {}): Promise<Storage> {
  const factory = options.indexedDB ?? globalThis.indexedDB
  const KeyRange = options.IDBKeyRange ?? globalThis.IDBKeyRange
  if (!factory || !KeyRange) {
    throw new TypeError('indexedDbStorage: this runtime has no IndexedDB; pass options.indexedDB')
  }
  const dbName = options.dbName ?? 'agentmsg'
  const storeName = options.storeName ?? 'kv'
  if (typeof dbName !== 'string' || typeof storeName !== 'string') {
    throw new TypeError('indexedDbStorage: dbName and storeName must be strings')
  }

  let closed = false
  let opening: Promise<IDBDatabase> | undefined

  const connect = (): Promise<IDBDatabase> => {
    if (closed) return Promise.reject(new Error(`indexedDbStorage(${dbName}): storage is closed`))
    if (!opening) {
      const pending = openStore(factory, dbName, storeName, () => {
        // Lost (versionchange or closed by the browser): the next operation opens again.
        if (opening === pending) opening = undefined
      })
      opening = pending
      pending.catch(() => {
        if (opening === pending) opening = undefined
      })
    }
    return opening
  }

  /**
   * Run `body` in one transaction on the store and resolve with its result once the
   * transaction has COMPLETED (for writes: committed), or reject with the first failure, the
   * signal's reason, or the transaction's error.
   */
  const transact = async <T>(
    mode: IDBTransactionMode,
    signal: AbortSignal | undefined,
    body: (store: IDBObjectStore) => () => T,
  ): Promise<T> => {
    let tx: IDBTransaction | undefined
    for (let attempt = 0; !tx; attempt++) {
      const db = await connect()
      signal?.throwIfAborted()
      try {
        tx = db.transaction(storeName, mode, { durability: 'strict' })
      } catch (err) {
        // The connection closed under us (versionchange): open again, once.
        if (attempt > 0 || (err as { name?: string })?.name !== 'InvalidStateError') throw err
        if (opening && (await opening.catch(() => undefined)) === db) opening = undefined
      }
    }
    const txn = tx
    return new Promise<T>((resolve, reject) => {
      let failure: { error: unknown } | undefined
      let result: (() => T) | undefined
      const abort = (error: unknown): void => {
        try {
          txn.abort()
          failure ??= { error }
        } catch {
          // Already committing or finished: the outcome is whatever `complete`/`abort` says.
        }
      }
      const onSignal = (): void => abort(signal?.reason)
      const done = (): void => signal?.removeEventListener('abort', onSignal)
      txn.oncomplete = () => {
        done()
        try {
          resolve((result as () => T)())
        } catch (err) {
          reject(err)
        }
      }
      txn.onabort = () => {
        done()
        reject(
          failure
            ? failure.error
            : (txn.error ?? new DOMException('IndexedDB transaction aborted', 'AbortError')),
        )
      }
      signal?.addEventListener('abort', onSignal, { once: true })
      try {
        result = body(txn.objectStore(storeName))
      } catch (err) {
        // A request that throws synchronously (DataCloneError, QuotaExceededError, …) would
        // leave the earlier requests of the transaction to commit: abort them.
        abort(err)
      }
    })
  }

  return {
    name: 'indexeddb',

    async get(key: string, options?: AbortOptions) {
      checkAbort(options)
      checkKey(key)
      return transact('readonly', options?.signal, (store) => {
        const request = store.get(key)
        return () => request.result as JsonValue | undefined
      })
    },

    async put(key: string, value: JsonValue, options?: AbortOptions) {
      checkAbort(options)
      checkKey(key)
      const copy = cloneJson(value)
      await transact('readwrite', options?.signal, (store) => {
        store.put(copy, key)
        return () => undefined
      })
    },

    async delete(key: string, options?: AbortOptions) {
      checkAbort(options)
      checkKey(key)
      await transact('readwrite', options?.signal, (store) => {
        store.delete(key)
        return () => undefined
      })
    },

    async batch(ops: StorageOp[], options?: AbortOptions) {
      checkAbort(options)
      if (!Array.isArray(ops)) throw new TypeError('storage batch: ops must be an array')
      // Validate and copy every op before opening the transaction, so a bad value late in the
      // batch fails it before anything is written.
      const ready = ops.map((op, i): StorageOp => {
        if (op === null || typeof op !== 'object') {
          throw new TypeError(`storage batch: op ${i} is not an object`)
        }
        checkKey(op.key, `op ${i}: `)
        if (op.type === 'put') return { type: 'put', key: op.key, value: cloneJson(op.value) }
        if (op.type === 'delete') return { type: 'delete', key: op.key }
        throw new TypeError(
          `storage batch: op ${i} has unknown type ${String((op as StorageOp).type)}`,
        )
      })
      if (ready.length === 0) return
      await transact('readwrite', options?.signal, (store) => {
        for (const op of ready) {
          if (op.type === 'put') store.put(op.value, op.key)
          else store.delete(op.key)
        }
        return () => undefined
      })
    },

    async list(prefix: string, options: StorageListOptions = {}) {
      checkAbort(options)
      checkKey(prefix, 'prefix: ')
      const { after, limit, signal } = options
      if (after !== undefined) checkKey(after, 'after: ')
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
        throw new TypeError(`storage list: limit must be a non-negative integer, got ${limit}`)
      }
      // IndexedDB reads `count: 0` as "no limit".
      if (limit === 0) return []
      const lowerOpen = after !== undefined && after >= prefix
      const from = lowerOpen ? after : prefix
      const end = prefixEnd(prefix)
      if (end !== undefined && from >= end) return []
      const range =
        end === undefined
          ? KeyRange.lowerBound(from, lowerOpen)
          : KeyRange.bound(from, end, lowerOpen, true)
      // `count` is an unsigned long: larger limits mean "all".
      const count = limit !== undefined && limit <= 0xffffffff ? limit : undefined
      return transact('readonly', signal, (store) => {
        // Both requests run in order in one transaction, so keys and values line up.
        const keys = store.getAllKeys(range, count)
        const values = store.getAll(range, count)
        return () => {
          const out: Array<[string, JsonValue]> = []
          keys.result.forEach((key, i) => {
            if (typeof key === 'string' && key.startsWith(prefix)) {
              out.push([key, values.result[i] as JsonValue])
            }
          })
          return out
        }
      })
    },

    async close() {
      if (closed) return
      closed = true
      const pending = opening
      opening = undefined
      // Transactions already started still complete; IndexedDB closes after them.
      const db = await pending?.catch(() => undefined)
      db?.close()
    },
  }
}

function checkAbort(options: AbortOptions | undefined): void {
  options?.signal?.throwIfAborted()
}
