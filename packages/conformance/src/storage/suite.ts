import type { Storage } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { runStorageContract, storageCheckNames } from './run.js'

/** Options for {@link testStorage}. */
export interface StorageContractOptions {
  /** For adapters that keep data across restarts: close `old` and open the same store again. */
  persistent?: { reopen: (old: Storage) => Promise<Storage> }
}

/**
 * The {@link Storage} conformance suite. Every adapter (memory, fs, IndexedDB, third-party) runs
 * it, so they all behave the same where the contract is precise: JSON in, equal JSON out; atomic
 * batches; ascending UTF-16 key order in `list`; non-JSON values refused; aborts honoured.
 * Each check of {@link runStorageContract} (shared with the browser suite) is one vitest test.
 *
 * `factory` must return an empty store each time it is called.
 *
 * @example
 * testStorage('memory', () => memoryStorage())
 * testStorage('fs', () => fsStorage({ dir: tmp() }), { persistent: { reopen: reopenFs } })
 */
export function testStorage(
  name: string,
  factory: () => Promise<Storage> | Storage,
  options: StorageContractOptions = {},
): void {
  const reopen = options.persistent?.reopen
  describe(`Storage contract: ${name}`, () => {
    for (const check of storageCheckNames(reopen !== undefined)) {
      it(check, async () => {
        const [result] = await runStorageContract(factory, {
          only: [check],
          ...(reopen ? { reopen } : {}),
        })
        expect(result?.error).toBeUndefined()
        expect(result).toMatchObject({ name: check, ok: true })
      })
    }
  })
}
