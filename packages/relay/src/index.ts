/**
 * @agentmsg/relay — the relay server (PROFILE §9): store-and-forward and pub/sub for agents
 * that cannot be reached directly, with SSE, WebSocket and webhook push, on an embedded SQLite
 * store (or any {@link RelayStore}). Node only.
 *
 * @packageDocumentation
 */

// Server
export {
  createRelayHandler,
  DEFAULT_PAGE_LIMIT,
  DEFAULT_RETENTION_MS,
  MAX_PAGE_BYTES,
  MAX_PAGE_LIMIT,
} from './server/handler.js'
export type {
  Feed,
  FeedSink,
  RelayHandler,
  RelayHandlerOptions,
  RelayLimits,
  RelayRequestInfo,
  RelayWebhookOptions,
} from './server/types.js'
export { serveRelay } from './server/serve.js'
export type { RelayServer, ServeRelayOptions } from './server/serve.js'
export { createRelayWebSocket } from './server/ws.js'
export type { RelayWebSocket, RelayWebSocketOptions } from './server/ws.js'
export { RELAY_USAGE, relayOptionsFromArgs, runRelayCommand } from './cli.js'
export type { RelayCommandIo } from './cli.js'

// Stores
export { MailboxFullError } from './store/types.js'
export type {
  MailboxEntry,
  MailboxPage,
  PublishInput,
  PublishResult,
  RelayStore,
  Subscription,
  WebhookTarget,
} from './store/types.js'
export { sqliteRelayStore, SQLITE_SCHEMA_VERSION } from './store/sqlite.js'
export type { SqliteCommitInfo, SqliteRelayStoreOptions } from './store/sqlite.js'
export { memoryRelayStore } from './store/memory.js'
export type { MemoryRelayStore, MemoryRelayStoreOptions } from './store/memory.js'
export { DEFAULT_QUOTA_BYTES, DEFAULT_QUOTA_MESSAGES } from './store/common.js'
export type { RelayQuota } from './store/common.js'
