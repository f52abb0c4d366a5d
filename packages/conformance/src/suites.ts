/** The contract suites as vitest tests: one test per check, each running that check alone. */
import type { Storage } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import type { CheckResult } from './assert.js'
import { runStorageContract, storageChecks } from './storage/checks.js'
import {
  runTransportContract,
  type TransportHarness,
  transportCheckNames,
} from './transport/checks.js'

function testEach(title: string, names: string[], run: (only: string[]) => Promise<CheckResult[]>) {
  describe(title, () => {
    for (const check of names) {
      it(check, async () => {
        const [result] = await run([check])
        expect(result?.error).toBeUndefined()
        expect(result).toMatchObject({ name: check, ok: true })
      })
    }
  })
}

/**
 * The `Storage` suite: JSON in, equal JSON out; atomic batches; UTF-16 key order; non-JSON
 * refused; aborts honoured. `factory` returns an empty store each time; `persistent.reopen`
 * (close `old`, open it again) adds the checks of what survives a reopen.
 * @example testStorage('fs', () => fsStorage({ dir: tmp() }), { persistent: { reopen } })
 */
export function testStorage(
  name: string,
  factory: () => Promise<Storage> | Storage,
  options: { persistent?: { reopen: (old: Storage) => Promise<Storage> } } = {},
): void {
  const reopen = options.persistent?.reopen
  const names = storageChecks(reopen !== undefined).map(([check]) => check)
  testEach(`Storage contract: ${name}`, names, (only) =>
    runStorageContract(factory, { only, ...(reopen && { reopen }) }),
  )
}

/**
 * The Transport suite: per check, fresh did:key agents with their own transports, one listening,
 * one sending. The harness is read when checks run (`get relays()` after a `beforeAll`).
 * @example testTransport('memory', { factory: memoryTransport(createMemoryHub()), delivery: 'direct' })
 */
export function testTransport(name: string, harness: TransportHarness): void {
  testEach(`Transport contract: ${name}`, transportCheckNames(harness.delivery), (only) =>
    runTransportContract(harness, only),
  )
}
