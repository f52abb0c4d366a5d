import type { Storage } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { storageChecks } from './checks.js'
import { runStorageContract } from './run.js'

/**
 * The `Storage` conformance suite, one vitest test per check: JSON in, equal JSON out; atomic
 * batches; ascending UTF-16 key order in `list`; non-JSON values refused; aborts honoured.
 * `factory` returns an empty store each time; `persistent.reopen` (close `old`, open the same
 * store again) adds the checks of what survives a reopen.
 *
 * @example
 * testStorage('memory', () => memoryStorage())
 * testStorage('fs', () => fsStorage({ dir: tmp() }), { persistent: { reopen: reopenFs } })
 */
export function testStorage(
  name: string,
  factory: () => Promise<Storage> | Storage,
  options: { persistent?: { reopen: (old: Storage) => Promise<Storage> } } = {},
): void {
  const reopen = options.persistent?.reopen
  describe(`Storage contract: ${name}`, () => {
    for (const [check] of storageChecks(reopen !== undefined)) {
      it(check, async () => {
        const [result] = await runStorageContract(factory, {
          only: [check],
          ...(reopen && { reopen }),
        })
        expect(result?.error).toBeUndefined()
        expect(result).toMatchObject({ name: check, ok: true })
      })
    }
  })
}
