import type { JsonValue } from '../types.js'
import type { AbortOptions } from './abort.js'

/** One write of an atomic {@link Storage.batch}. */
export type StorageOp =
  | { type: 'put'; key: string; value: JsonValue }
  | { type: 'delete'; key: string }

/** Options for {@link Storage.list}. */
export interface StorageListOptions extends AbortOptions {
  /** Only keys strictly greater than this one (for paging). */
  after?: string
  /** At most this many entries. */
  limit?: number
}

/**
 * The storage contract every adapter implements (memory, filesystem, IndexedDB, or your own).
 * Keys are strings (the SDK namespaces them with `/`); values are JSON. Entries are listed in
 * ascending key order (UTF-16 code unit order, as `<` compares strings).
 */
export interface Storage {
  /** A short name for diagnostics, e.g. `memory`, `fs`, `indexeddb`. */
  readonly name: string
  /** The value stored under `key`, or `undefined`. */
  get(key: string, options?: AbortOptions): Promise<JsonValue | undefined>
  /** Store `value` under `key`, replacing what was there. Durable when the promise resolves. */
  put(key: string, value: JsonValue, options?: AbortOptions): Promise<void>
  /** Remove `key`; removing a missing key is not an error. */
  delete(key: string, options?: AbortOptions): Promise<void>
  /** Apply all ops atomically, in order. */
  batch(ops: StorageOp[], options?: AbortOptions): Promise<void>
  /** Entries whose key starts with `prefix`, in ascending key order. */
  list(
    prefix: string,
    options?: StorageListOptions,
  ): Promise<Array<[key: string, value: JsonValue]>>
  /** Release resources (file locks, database handles). Optional. */
  close?(): Promise<void>
}
