/**
 * `@agentmsg/conformance/portable` — the parts that need no test runner and no Node: the
 * Storage and Transport checks as plain functions that report results (for a browser page or
 * any runner), the shared fixtures, and the example memory transport.
 *
 * @packageDocumentation
 */

export { socketDetail } from './assert.js'
export type { MemoryHub } from './examples/memory-transport.js'
export { createMemoryHub, MEMORY_KIND, memoryTransport } from './examples/memory-transport.js'
export type { FixtureAgent, FixtureSignOptions } from './fixtures.js'
export { fixtureAgent, sealedMessage, signedMessage } from './fixtures.js'
export { seededRandom } from './seeded-random.js'
export type { RunStorageContractOptions, StorageCheckResult } from './storage/run.js'
export { runStorageContract, storageCheckNames } from './storage/run.js'
export type {
  TransportCheckResult,
  TransportDeliveryModel,
  TransportHarness,
} from './transport/harness.js'
export type { RunTransportContractOptions } from './transport/run.js'
export { runTransportContract, transportCheckNames } from './transport/run.js'
