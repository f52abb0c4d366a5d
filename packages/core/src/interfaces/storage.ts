import type { JsonValue } from '../types.js'

/** Options every async SDK method accepts. */
export interface AbortOptions {
  /** Abort the operation; the promise rejects with the signal's reason. */
  signal?: AbortSignal
}

/** One write of an atomic {@link Storage.batch}. */
export type StorageOp =
  | { type: 'put'; key: string; value: JsonValue }
  | { type: 'delete'; key: string }

/** Options for {@link Storage.list}. */
export interface StorageListOptions extends AbortOptions {
  /** Only keys strictly greater (paging). */
  after?: string
  /** At most this many entries. */
  limit?: number
}

/** The storage contract: JSON values under string keys, listed in UTF-16 code unit order. */
export interface Storage {
  /** Names the backend: `memory`, `fs`, `indexeddb`, … */
  readonly name: string
  /** The value under `key`, or `undefined`. */
  get(key: string, options?: AbortOptions): Promise<JsonValue | undefined>
  /** Store `value` under `key`, replacing what was there. Durable when the promise resolves. */
  put(key: string, value: JsonValue, options?: AbortOptions): Promise<void>
  /** Remove `key`; a missing key is no error. */
  delete(key: string, options?: AbortOptions): Promise<void>
  /** Apply every op or none (atomic); durable when the promise resolves. */
  batch(ops: StorageOp[], options?: AbortOptions): Promise<void>
  /** The entries whose key starts with `prefix`, in key order. */
  list(
    prefix: string,
    options?: StorageListOptions,
  ): Promise<Array<[key: string, value: JsonValue]>>
  /** Release resources (file locks, database handles). */
  close?(): Promise<void>
}
