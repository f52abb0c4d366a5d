/**
 * `@agentmsg/conformance`: the contract suites to run against your own implementations
 * (vitest): `testStorage` (core's `Storage`), `testRelayStore` (the relay's `RelayStore`),
 * `testTransport` (core's `Transport`), with the fixtures they use. Everything of `./portable`
 * is here too.
 *
 * @packageDocumentation
 */
export * from './portable.js'
export { publishInput, RELAY_STORE_NOW } from './relay-store/fixtures.js'
export { type RelayStoreFactory, testRelayStore } from './relay-store/suite.js'
export { testStorage, testTransport } from './suites.js'
export type { TransportHarness } from './transport/checks.js'
