/** The Transport harness, and the checks run without a test runner (`testTransport` runs each under vitest). */
import type { PeerRoute, TransportComponents, TransportFactory } from '@agentmsg/core'
import { describeError } from '@agentmsg/core/http'
import type { FixtureAgent } from '../fixtures.js'
import { type CheckResult, runChecks } from '../run.js'
import { transportChecks } from './checks.js'
import { PeerSet } from './peers.js'

/** The transport under test and what a sender knows of the agents it reaches. */
export interface TransportHarness {
  /** Builds the transport of one agent (the suite makes one per agent and restart). */
  factory: TransportFactory
  /**
   * `direct` (an inbox, a hub): `send` settles with the receiver's outcome, rejecting with a
   * refusal's error (same `code`), nothing delivered again. `stored` (a relay): `send` resolves
   * once stored; a refusal with `retry: true` is delivered again (at the latest on the next
   * listen), any other outcome removes it.
   */
  delivery: 'direct' | 'stored'
  /**
   * What a sender knows of `agent` (identity document, inbox, relays); the suite sends to the
   * first of `targets(peer)`. @default { agent, relays: harness.relays ?? [] }
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
export function runTransportContract(
  harness: TransportHarness,
  only?: readonly string[],
): Promise<CheckResult[]> {
  return runChecks(transportChecks(harness.delivery), only, async (check) => {
    const peers = new PeerSet(harness)
    try {
      await check(peers)
      if (peers.problems.length > 0) throw peers.problems[0]
    } catch (err) {
      const reported = peers.errors.map(describeError).join('; ')
      throw new Error(describeError(err) + (reported ? ` (onError: ${reported})` : ''))
    } finally {
      await peers.closeAll().catch(() => undefined)
    }
  })
}
