import { describe, expect, it } from 'vitest'
import type { TransportHarness } from './harness.js'
import { runTransportContract, transportCheckNames } from './run.js'

/**
 * The Transport conformance suite (core's `Transport` contract): every transport (https,
 * relay, your own) runs it. Each check of {@link runTransportContract} is one vitest test with
 * fresh did:key agents, each running its own transport from `harness.factory`.
 *
 * The harness is read when the checks run, so its fields may use a server that a `beforeAll`
 * started (e.g. `get relays() { return [relay.url] }`).
 *
 * @example
 * const hub = createMemoryHub()
 * testTransport('memoryTransport', { factory: memoryTransport(hub), delivery: 'direct' })
 */
export function testTransport(name: string, harness: TransportHarness): void {
  describe(`Transport contract: ${name}`, () => {
    for (const check of transportCheckNames(harness.delivery)) {
      it(check, async () => {
        const [result] = await runTransportContract(harness, { only: [check] })
        expect(result?.error).toBeUndefined()
        expect(result).toMatchObject({ name: check, ok: true })
      })
    }
  })
}
