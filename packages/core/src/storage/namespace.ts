import type { Storage, StorageOp } from '../interfaces/storage.js'

/** A view of `storage` with every key under `prefix`, so components can share one store. */
export function namespacedStorage(storage: Storage, prefix: string): Storage {
  if (typeof prefix !== 'string' || !prefix.endsWith('/')) {
    throw new TypeError(
      `namespacedStorage: prefix must end with '/', got ${JSON.stringify(prefix)}`,
    )
  }
  const inner = (key: string): string => {
    // Checked here because `prefix + 42` would quietly become a valid string key.
    if (typeof key !== 'string') throw new TypeError('storage: key must be a string')
    return prefix + key
  }
  return {
    name: storage.name,
    // async, so a bad key rejects rather than throws.
    get: async (key, options) => storage.get(inner(key), options),
    put: async (key, value, options) => storage.put(inner(key), value, options),
    delete: async (key, options) => storage.delete(inner(key), options),
    batch: async (ops, options) => {
      if (!Array.isArray(ops)) throw new TypeError('storage batch: ops must be an array')
      const mapped = ops.map((op): StorageOp => ({ ...op, key: inner(op.key) }))
      return storage.batch(mapped, options)
    },
    async list(listPrefix, options = {}) {
      const { after, ...rest } = options
      const entries = await storage.list(inner(listPrefix), {
        ...rest,
        ...(after === undefined ? {} : { after: inner(after) }),
      })
      return entries.map(([key, value]) => [key.slice(prefix.length), value])
    },
  }
}
