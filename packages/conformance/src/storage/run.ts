/** The `Storage` checks without a test runner (a browser page); `testStorage` runs each under vitest. */
import type { Storage } from '@agentmsg/core'
import { describeError } from '@agentmsg/core/http'
import { type CheckResult, runChecks } from '../run.js'
import { storageChecks } from './checks.js'

/** The outcome of one check. */
export type StorageCheckResult = CheckResult

/**
 * Run the contract checks (`only` these names), each on a fresh empty store from `factory`, and
 * report each one. With `reopen` (close `old`, open the same store again) the persistence
 * checks run too.
 *
 * @example
 * const results = await runStorageContract(() => memoryStorage())
 * console.log(results.every((r) => r.ok))
 */
export function runStorageContract(
  factory: () => Promise<Storage> | Storage,
  options: { reopen?: (old: Storage) => Promise<Storage>; only?: readonly string[] } = {},
): Promise<StorageCheckResult[]> {
  return runChecks(storageChecks(options.reopen !== undefined), options.only, async (check) => {
    let storage: Storage | undefined
    let closeError: Error | undefined
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
    } finally {
      try {
        await storage?.close?.()
      } catch (err) {
        // Reported only when the check itself passed.
        closeError = new Error(`close: ${describeError(err)}`)
      }
    }
    if (closeError) throw closeError
  })
}
