/**
 * `@agentmsg/conformance/portable`: what needs no test runner and no Node (a browser page): the
 * Storage checks as a function that reports, the fixtures, the example memory transport.
 *
 * @packageDocumentation
 */

export type { CheckResult as StorageCheckResult } from './assert.js'
export { createMemoryHub, memoryTransport } from './examples/memory-transport.js'
export { type FixtureAgent, fixtureAgent, sealedMessage, signedMessage } from './fixtures.js'
export { runStorageContract } from './storage/checks.js'
