import type { PeerRoute, TransportComponents, TransportFactory } from '@agentmsg/core'
import { describeError } from '@agentmsg/core/http'
import { describe, expect, it } from 'vitest'

import type { FixtureAgent } from '../fixtures.js'
import { transportChecks } from './checks.js'
import { PeerSet } from './peers.js'

/** The transport under test and what a sender knows of the agents it reaches. */
export interface TransportHarness {
  /** Builds the transport for one agent; the suite creates one per agent (and per restart). */
  factory: TransportFactory
  /**
   * How `send` answers for the receiver's outcome (core's `DeliveryOutcome`):
   * - `direct` (an inbox, an in-process hub): `send` settles after the receiver answered,
   *   rejecting with the refusal's error (same `code`); nothing is delivered again.
   * - `stored` (a relay): `send` resolves once the message is stored. `accepted`, `duplicate`
   *   and refusals without retry remove it; a refusal with `retry: true` is delivered again (at
   *   the latest when the recipient listens again).
   */
  delivery: 'direct' | 'stored'
  /**
   * What a sender knows of `agent`, listening with this transport: its identity document,
   * inbox or relays. The suite sends to the first of the sender's `targets(peer)`.
   * @default { agent, relays: harness.relays ?? [] }
   */
  peer?(agent: string): PeerRoute | Promise<PeerRoute>
  /** The agents' relays (`components.relays`). @default [] */
  relays?: readonly string[]
  /** Replace parts of the components the suite builds for `agent` (fresh did:key agents). */
  components?(agent: FixtureAgent): Partial<TransportComponents>
  /** How long to wait for a delivery before the check fails, ms. @default 10_000 */
  timeoutMs?: number
}

/** The names of the checks for a transport of the `delivery` model, in order. */
export function transportCheckNames(delivery: TransportHarness['delivery']): string[] {
  return transportChecks(delivery).map(([name]) => name)
}

/** Run the Transport checks (all, or `only` these) and report each; a failure adds `onError`'s reports. */
export async function runTransportContract(
  harness: TransportHarness,
  only?: readonly string[],
): Promise<Array<{ name: string; ok: boolean; error?: string }>> {
  const results: Array<{ name: string; ok: boolean; error?: string }> = []
  for (const [name, check] of transportChecks(harness.delivery)) {
    if (only && !only.includes(name)) continue
    const peers = new PeerSet(harness)
    try {
      await check(peers)
      if (peers.problems.length > 0) throw peers.problems[0]
      results.push({ name, ok: true })
    } catch (err) {
      const reported = peers.errors.map(describeError).join('; ')
      const error = describeError(err) + (reported ? ` (onError: ${reported})` : '')
      results.push({ name, ok: false, error })
    } finally {
      await peers.closeAll().catch(() => undefined)
    }
  }
  return results
}

/**
 * The Transport conformance suite, one vitest test per check, each with fresh did:key agents
 * running their own transports: one listens, another finds its targets and sends. The harness
 * is read when the checks run (`get relays() { return [relay.url] }` after a `beforeAll`).
 *
 * @example
 * testTransport('memoryTransport', { factory: memoryTransport(createMemoryHub()), delivery: 'direct' })
 */
export function testTransport(name: string, harness: TransportHarness): void {
  describe(`Transport contract: ${name}`, () => {
    for (const check of transportCheckNames(harness.delivery)) {
      it(check, async () => {
        const [result] = await runTransportContract(harness, [check])
        expect(result?.error).toBeUndefined()
        expect(result).toMatchObject({ name: check, ok: true })
      })
    }
  })
}
