/**
 * @agentmsg/relay — the relay server (PROFILE §9) with SSE, WebSocket and webhook push, the
 * `RelayStore` contract and a memory store; SQLite at `/sqlite`, PostgreSQL at `/postgres`.
 *
 * @packageDocumentation
 */
export { createRelayHandler } from './server/handler.js'
export { type RelayServer, type ServeRelayOptions, serveRelay } from './server/serve.js'
export {
  RELAY_LOG_LEVELS,
  type RelayHandlerOptions,
  type RelayLimits,
  type RelayObserver,
  type RelayServerHandler,
} from './server/types.js'
// The WebSocket endpoint for a relay handler mounted in a server of the application's own.
export { createRelayWebSocket } from './server/ws.js'
export type { RelayQuota } from './store/common.js'
export { type MemoryRelayStore, memoryRelayStore } from './store/memory.js'
export {
  type AckOptions,
  type DuplicateQuery,
  type MailboxEntry,
  MailboxFullError,
  type MailboxPage,
  type PublishInput,
  RelayStorageFullError,
  type RelayStore,
  type StorePublishResult,
  type Subscription,
  type WebhookTarget,
} from './store/types.js'
