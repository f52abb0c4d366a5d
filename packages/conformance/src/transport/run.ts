/**
 * Runs the Transport checks without a test runner (any page or script); `testTransport` turns
 * each into one vitest test.
 */
import { describeError } from '../assert.js'
import { transportChecks } from './checks.js'
import type { TransportCheckResult, TransportDeliveryModel, TransportHarness } from './harness.js'
import { PeerSet } from './peers.js'

/** Options for {@link runTransportContract}. */
export interface RunTransportContractOptions {
  /** Run only the checks with these names. */
  only?: readonly string[]
}

/** The names of the checks for a transport of the `delivery` model, in order. */
export function transportCheckNames(delivery: TransportDeliveryModel): string[] {
  return transportChecks(delivery).map(([name]) => name)
}

/**
 * Run every Transport check against `harness` and report each one; never throws for a failing
 * check. Each check uses fresh agents and closes every transport it opened; what the transports
 * reported through `components.onError` is added to a failure's message.
 */
export async function runTransportContract(
  harness: TransportHarness,
  options: RunTransportContractOptions = {},
): Promise<TransportCheckResult[]> {
  const results: TransportCheckResult[] = []
  for (const [name, check] of transportChecks(harness.delivery)) {
    if (options.only && !options.only.includes(name)) continue
    const peers = new PeerSet(harness)
    try {
      await check(peers)
      if (peers.problems.length > 0) throw peers.problems[0]
      results.push({ name, ok: true })
    } catch (err) {
      const reported = peers.errors.map(describeError).join('; ')
      results.push({
        name,
        ok: false,
        error: describeError(err) + (reported ? ` (onError: ${reported})` : ''),
      })
    } finally {
      await peers.closeAll().catch(() => undefined)
    }
  }
  return results
}
