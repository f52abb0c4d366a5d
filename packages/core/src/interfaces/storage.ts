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
  limit?: number
}

/** The storage contract: JSON values under string keys, listed in UTF-16 code unit order. */
export interface Storage {
  readonly name: string
  get(key: string, options?: AbortOptions): Promise<JsonValue | undefined>
  /** Store `value` under `key`, replacing what was there. Durable when the promise resolves. */
  put(key: string, value: JsonValue, options?: AbortOptions): Promise<void>
  delete(key: string, options?: AbortOptions): Promise<void>
  batch(ops: StorageOp[], options?: AbortOptions): Promise<void>
  list(
    prefix: string,
    options?: StorageListOptions,
  ): Promise<Array<[key: string, value: JsonValue]>>
  /** Release resources (file locks, database handles). */
  close?(): Promise<void>
}
