/**
 * `@agentmsg/core/storage` — the Storage contract's two helpers: an in-memory Storage and a
 * namespaced view of one. A narrow entry for bundle size (see `@agentmsg/core/message`); the
 * root entry exports both too.
 *
 * @packageDocumentation
 */

export type { Storage, StorageListOptions, StorageOp } from './interfaces/storage.js'
export { memoryStorage } from './storage/memory.js'
export { namespacedStorage } from './storage/namespace.js'
