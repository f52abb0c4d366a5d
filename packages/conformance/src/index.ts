/**
 * `@agentmsg/conformance`: contract suites (vitest) for your own `Storage`, `RelayStore` and
 * `Transport`, with their fixtures; everything of `./portable` too.
 *
 * @packageDocumentation
 */
export * from './portable.js'
export { publishInput, RELAY_STORE_NOW } from './relay-store/fixtures.js'
export { type RelayStoreFactory, testRelayStore } from './relay-store/suite.js'
export { testStorage, testTransport } from './suites.js'
export type { TransportHarness } from './transport/checks.js'
