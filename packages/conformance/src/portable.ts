/**
 * `@agentmsg/conformance/portable`: what needs no test runner and no Node, for a browser page
 * or any runner: the Storage checks as a plain function that reports results, the fixtures,
 * and the example memory transport.
 *
 * @packageDocumentation
 */
export { createMemoryHub, memoryTransport } from './examples/memory-transport.js'
export { type FixtureAgent, fixtureAgent, sealedMessage, signedMessage } from './fixtures.js'
export { runStorageContract, type StorageCheckResult } from './storage/checks.js'
