/**
 * `@agentmsg/storage-indexeddb`: the agentmsg `Storage` contract on IndexedDB, for browsers.
 *
 * @packageDocumentation
 */
import type { AbortOptions, JsonValue, Storage, StorageOp } from '@agentmsg/core'
import { cloneJsonValue } from '@agentmsg/core/http'
import { openStore } from './_open.js'

/** Options for {@link indexedDbStorage}. */
export interface IndexedDbStorageOptions {
  /** The database; stores with different names never see each other's keys. @default 'agentmsg' */
  dbName?: string
  /**
   * The object store in it. Several may share one database: opening a new one upgrades it, and
   * the other open storages reconnect on their own. @default 'kv'
   */
  storeName?: string
  /** For runtimes without a global one (`fake-indexeddb` on Node). @default globalThis.indexedDB */
  indexedDB?: IDBFactory
  /** The `IDBKeyRange` of that `indexedDB`. @default globalThis.IDBKeyRange */
  IDBKeyRange?: typeof IDBKeyRange
}

/**
 * Open (creating if needed) a {@link Storage} in IndexedDB. Values must be JSON (refused with a
 * `TypeError` before IndexedDB is touched, as every agentmsg adapter does); a write resolves once
 * its transaction committed; `batch` is one transaction; `list` is in UTF-16 code unit order
 * (IndexedDB's, and `<`'s). When another connection upgrades or deletes the database, this one
 * closes at once (never blocking it) and reconnects on its next operation.
 *
 * @example
 * const storage = await indexedDbStorage({ dbName: 'my-agent' })
 */
export async function indexedDbStorage(options: IndexedDbStorageOptions = {}): Promise<Storage> {
  const factory = options.indexedDB ?? globalThis.indexedDB
  const KeyRange = options.IDBKeyRange ?? globalThis.IDBKeyRange
  if (!factory || !KeyRange) {
    throw new TypeError('indexedDbStorage: this runtime has no IndexedDB; pass options.indexedDB')
  }
  const dbName = options.dbName ?? 'agentmsg'
  const storeName = options.storeName ?? 'kv'

  let closed = false
  let opening: Promise<IDBDatabase> | undefined

  const connect = (): Promise<IDBDatabase> => {
    if (closed) return Promise.reject(new Error(`indexedDbStorage(${dbName}): storage is closed`))
    if (!opening) {
      const forget = () => {
        if (opening === pending) opening = undefined
      }
      const pending = openStore(factory, dbName, storeName, forget)
      opening = pending
      pending.catch(forget)
    }
    return opening
  }

  /**
   * Run `body` in one transaction and resolve with its result once the transaction COMPLETED
   * (writes: committed), or reject with the first failure, the signal's reason or its error.
   */
  const transact = async <T>(
    mode: IDBTransactionMode,
    signal: AbortSignal | undefined,
    body: (store: IDBObjectStore) => () => T,
  ): Promise<T> => {
    let tx!: IDBTransaction
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
    return new Promise<T>((resolve, reject) => {
      let failure: { error: unknown } | undefined
      let result: (() => T) | undefined
      const abort = (error: unknown): void => {
        try {
          tx.abort()
          failure ??= { error }
        } catch {} // already finished: `complete` or `abort` tells the outcome
      }
      const onSignal = (): void => abort(signal?.reason)
      const done = (): void => signal?.removeEventListener('abort', onSignal)
      tx.oncomplete = () => {
        done()
        try {
          resolve((result as () => T)())
        } catch (err) {
          reject(err)
        }
      }
      tx.onabort = () => {
        done()
        const error = tx.error ?? new DOMException('IndexedDB transaction aborted', 'AbortError')
        reject(failure ? failure.error : error)
      }
      signal?.addEventListener('abort', onSignal, { once: true })
      try {
        result = body(tx.objectStore(storeName))
      } catch (err) {
        abort(err) // a request that threw must not let the earlier ones commit
      }
    })
  }

  /** Applies `ops` (checked and copied) in one transaction. */
  const write = (ops: StorageOp[], signal: AbortSignal | undefined) =>
    transact('readwrite', signal, (store) => {
      for (const op of ops) {
        if (op.type === 'put') store.put(op.value, op.key)
        else store.delete(op.key)
      }
      return () => undefined
    })

  return {
    name: 'indexeddb',
    async get(key, options) {
      checkCall(options, key)
      return transact('readonly', options?.signal, (store) => {
        const request = store.get(key)
        return () => request.result as JsonValue | undefined
      })
    },
    async put(key, value, options) {
      checkCall(options, key)
      await write([{ type: 'put', key, value: cloneJsonValue(value) }], options?.signal)
    },
    async delete(key, options) {
      checkCall(options, key)
      await write([{ type: 'delete', key }], options?.signal)
    },
    async batch(ops, options) {
      options?.signal?.throwIfAborted()
      if (!Array.isArray(ops)) throw new TypeError('storage batch: ops must be an array')
      // Validate and copy every op before opening the transaction, so a bad value late in the
      // batch fails it before anything is written.
      const ready = ops.map((op, i): StorageOp => {
        if (op === null || typeof op !== 'object') {
          throw new TypeError(`storage batch: op ${i} is not an object`)
        }
        checkCall(undefined, op.key, `op ${i}: `)
        if (op.type === 'put') return { type: 'put', key: op.key, value: cloneJsonValue(op.value) }
        if (op.type === 'delete') return { type: 'delete', key: op.key }
        const type = String((op as StorageOp).type)
        throw new TypeError(`storage batch: op ${i} has unknown type ${type}`)
      })
      if (ready.length > 0) await write(ready, options?.signal)
    },
    async list(prefix, options = {}) {
      checkCall(options, prefix, 'prefix: ')
      const { after, limit, signal } = options
      if (after !== undefined) checkCall(undefined, after, 'after: ')
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

/** A call's synchronous checks (the signal's first); the async methods turn them into rejections. */
function checkCall(o: AbortOptions | undefined, key: unknown, what = ''): asserts key is string {
  o?.signal?.throwIfAborted()
  if (typeof key !== 'string') throw new TypeError(`storage: ${what}key must be a string`)
}

/**
 * The smallest string greater than every string that starts with `prefix`, or `undefined` when
 * there is none (`''`, or only U+FFFF); not `prefix + '\uffff'`, which `prefix + '\uffff\uffff'` passes.
 */
function prefixEnd(prefix: string): string | undefined {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const unit = prefix.charCodeAt(i)
    // Code units, not code points: IndexedDB and `<` both compare strings unit by unit, and
    // a lone surrogate is a valid key unit here.
    if (unit < 0xffff) return prefix.slice(0, i) + String.fromCharCode(unit + 1)
  }
  return undefined
}
