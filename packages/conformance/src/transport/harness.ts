/** What a transport's author gives `testTransport` / `runTransportContract`. */
import type { DeliveryTarget, TransportComponents, TransportFactory } from '@agentmsg/core'
import type { FixtureAgent } from '../fixtures.js'

/**
 * How a transport answers for the receiver's {@link DeliveryOutcome} (core's contract names the
 * two models):
 *
 * - `direct` — an inbox, an in-process hub: `send` settles after the receiver answered. It
 *   resolves for `accepted` and `duplicate`, rejects with the refusal's error (same `code`) for
 *   `refused`, and nothing is delivered again.
 * - `stored` — a relay: `send` resolves once the message is stored for the recipient. The
 *   receiver's `accepted`, `duplicate` and refusals without retry remove it; a `refused` with
 *   `retry: true` stays and is delivered again (at the latest when the recipient listens
 *   again).
 */
export type TransportDeliveryModel = 'direct' | 'stored'

/** The transport under test and how to reach an agent with it. */
export interface TransportHarness {
  /** Builds the transport for one agent; the suite creates one per agent (and per restart). */
  factory: TransportFactory
  /** See {@link TransportDeliveryModel}. */
  delivery: TransportDeliveryModel
  /**
   * Where `agent` (listening with this transport) receives. @default the receiving
   * transport's own `route(agent)`
   */
  target?(agent: string): DeliveryTarget | Promise<DeliveryTarget>
  /** The agents' relays (`components.relays`). @default [] */
  relays?: readonly string[]
  /** Replace parts of the components the suite builds for `agent` (fresh did:key agents). */
  components?(agent: FixtureAgent): Partial<TransportComponents>
  /** How long to wait for a delivery before the check fails, ms. @default 10_000 */
  timeoutMs?: number
}

/** The outcome of one check. */
export interface TransportCheckResult {
  name: string
  ok: boolean
  error?: string
}
