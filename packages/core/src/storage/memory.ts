import type { AbortOptions, Storage, StorageListOptions, StorageOp } from '../interfaces/storage.js'
import type { JsonValue } from '../types.js'
import { cloneJsonValue } from './clone.js'

/** A {@link Storage} in this process's memory: for tests, short-lived agents, or a fallback. */
export function memoryStorage(): Storage {
  const entries = new Map<string, JsonValue>()
  // Ascending keys as of the last `list` (deleted ones dropped on the next rebuild) + `added`.
  let sorted: string[] = []
  let added: string[] = []
  let stale = false

  const index = (): string[] => {
    if (added.length === 0 && !stale) return sorted
    added.sort()
    const merged: string[] = []
    let i = 0
    let j = 0
    while (i < sorted.length || j < added.length) {
      const a = sorted[i]
      const b = added[j]
      let next: string
      if (b === undefined || (a !== undefined && a <= b)) {
        next = a as string
        i++
      } else {
        next = b
        j++
      }
      if (entries.has(next) && merged[merged.length - 1] !== next) merged.push(next)
    }
    sorted = merged
    added = []
    stale = false
    return sorted
  }

  const write = (key: string, value: JsonValue): void => {
    if (!entries.has(key)) added.push(key)
    entries.set(key, value)
  }

  const remove = (key: string): void => {
    if (entries.delete(key)) stale = true
  }

  return {
    name: 'memory',

    async get(key, options) {
      checkKey(key, '', options)
      const value = entries.get(key)
      return value === undefined ? undefined : cloneJsonValue(value)
    },

    async put(key, value, options) {
      checkKey(key, '', options)
      write(key, cloneJsonValue(value))
    },

    async delete(key, options) {
      checkKey(key, '', options)
      remove(key)
    },

    async batch(ops: StorageOp[], options?: AbortOptions) {
      options?.signal?.throwIfAborted()
      if (!Array.isArray(ops)) throw new TypeError('storage batch: ops must be an array')
      // Validate and copy every op first: a bad op late in the batch leaves the store as it was.
      const ready = ops.map((op, i): StorageOp => {
        if (op === null || typeof op !== 'object') {
          throw new TypeError(`storage batch: op ${i} is not an object`)
        }
        checkKey(op.key, `op ${i}: `)
        if (op.type === 'put') return { type: 'put', key: op.key, value: cloneJsonValue(op.value) }
        if (op.type === 'delete') return { type: 'delete', key: op.key }
        throw new TypeError(
          `storage batch: op ${i} has unknown type ${String((op as StorageOp).type)}`,
        )
      })
      for (const op of ready) {
        if (op.type === 'put') write(op.key, op.value)
        else remove(op.key)
      }
    },

    async list(prefix: string, options: StorageListOptions = {}) {
      checkKey(prefix, 'prefix: ', options)
      const { after, limit } = options
      if (after !== undefined) checkKey(after, 'after: ')
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
        throw new TypeError(`storage list: limit must be a non-negative integer, got ${limit}`)
      }
      const keys = index()
      const from = after !== undefined && after >= prefix ? after : prefix
      let i = lowerBound(keys, from)
      if (after !== undefined && keys[i] === after) i++
      const out: Array<[string, JsonValue]> = []
      const max = limit ?? Infinity
      for (; i < keys.length && out.length < max; i++) {
        const key = keys[i] as string
        if (!key.startsWith(prefix)) break
        out.push([key, cloneJsonValue(entries.get(key) as JsonValue)])
      }
      return out
    },
  }
}

function lowerBound(keys: string[], target: string): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((keys[mid] as string) < target) lo = mid + 1
    else hi = mid
  }
  return lo
}

function checkKey(key: unknown, what = '', options?: AbortOptions): asserts key is string {
  options?.signal?.throwIfAborted()
  if (typeof key !== 'string') throw new TypeError(`storage: ${what}key must be a string`)
}
