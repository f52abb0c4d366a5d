/** The `Storage` checks without a test runner (a browser page); `testStorage` runs each under vitest. */

import type { Storage } from '@agentmsg/core'
import { describeError } from '@agentmsg/core/http'

import { storageChecks } from './checks.js'

/** The outcome of one check. */
export interface StorageCheckResult {
  name: string
  ok: boolean
  error?: string
}

/**
 * Run every contract check against a fresh store from `factory` (which must return an empty
 * store each call) and report each one; never throws for a failing check. With `reopen` (close
 * `old` and open the same store again) the persistence checks run too; `only` runs only the
 * checks with these names.
 *
 * @example
 * const results = await runStorageContract(() => memoryStorage())
 * console.log(results.every((r) => r.ok))
 */
export async function runStorageContract(
  factory: () => Promise<Storage> | Storage,
  options: { reopen?: (old: Storage) => Promise<Storage>; only?: readonly string[] } = {},
): Promise<StorageCheckResult[]> {
  const results: StorageCheckResult[] = []
  for (const [name, check] of storageChecks(options.reopen !== undefined)) {
    if (options.only && !options.only.includes(name)) continue
    let storage: Storage | undefined
    try {
      storage = await factory()
      const ctx = {
        storage,
        reopen: async () => {
          if (!options.reopen || !storage) throw new Error('no reopen')
          storage = await options.reopen(storage)
          ctx.storage = storage
          return storage
        },
      }
      await check(ctx)
      results.push({ name, ok: true })
    } catch (err) {
      results.push({ name, ok: false, error: describeError(err) })
    } finally {
      try {
        await storage?.close?.()
      } catch (err) {
        const last = results[results.length - 1]
        if (last?.ok) Object.assign(last, { ok: false, error: `close: ${describeError(err)}` })
      }
    }
  }
  return results
}
