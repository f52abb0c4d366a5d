/**
 * `@agentmsg/conformance` — the contract suites to run against your own implementations
 * (vitest): `testStorage` (core's `Storage`), `testRelayStore` (the relay's `RelayStore`),
 * `testTransport` (core's `Transport`); the fixtures the packages' tests share; and an example
 * custom transport (`memoryTransport`). Everything of `./portable` is here too.
 *
 * @packageDocumentation
 */
export * from './portable.js'
export { publishInput, RELAY_STORE_NOW } from './relay-store/fixtures.js'
export type { RelayStoreFactory, RelayStoreUnderTest } from './relay-store/suite.js'

export { testRelayStore } from './relay-store/suite.js'
export type { StorageContractOptions } from './storage/suite.js'
export { testStorage } from './storage/suite.js'

export { testTransport } from './transport/suite.js'
