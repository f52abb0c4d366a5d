/**
 * @agentmsg/relay — the relay server (PROFILE §9): store-and-forward and pub/sub for agents
 * that cannot be reached directly, with SSE, WebSocket and webhook push, on an embedded SQLite
 * store (or any {@link RelayStore}). Node only.
 *
 * @packageDocumentation
 */

export type { RelayCommandIo } from './cli.js'
export { RELAY_USAGE, relayOptionsFromArgs, runRelayCommand } from './cli.js'
// Server
export {
  createRelayHandler,
  DEFAULT_PAGE_LIMIT,
  DEFAULT_RETENTION_MS,
  DEFAULT_STREAMS_PER_AGENT,
  DEFAULT_SUBSCRIPTIONS_PER_AGENT,
  MAX_PAGE_BYTES,
  MAX_PAGE_LIMIT,
} from './server/handler.js'
export type { RelayLogger, RelayLoggerOptions } from './server/relay-log.js'
// Operations (issue 14): metrics and logs, as observers of the relay
export { createRelayLogger, logObserver } from './server/relay-log.js'
export type { MetricsListener, RelayMetricsOptions } from './server/relay-metrics.js'
export { listenMetrics, MetricsListenError, RelayMetrics } from './server/relay-metrics.js'
export { combineObservers } from './server/relay-report.js'
export type { RelayServer, ServeRelayOptions } from './server/serve.js'
export { serveRelay } from './server/serve.js'
export type {
  DeliveryMode,
  Feed,
  FeedSink,
  RateLimitScope,
  RefusedRequest,
  RelayHandlerOptions,
  RelayLimits,
  RelayObserver,
  RelayRequestInfo,
  RelayServerHandler,
  RelayWebhookOptions,
  StreamKind,
} from './server/types.js'
export type { RelayWebSocket, RelayWebSocketOptions } from './server/ws.js'
export { createRelayWebSocket } from './server/ws.js'
export type { RelayQuota } from './store/common.js'
export {
  DEFAULT_QUOTA_BYTES,
  DEFAULT_QUOTA_MESSAGES,
  DEFAULT_QUOTA_TOTAL_BYTES,
} from './store/common.js'
export type { MemoryRelayStore, MemoryRelayStoreOptions } from './store/memory.js'
export { memoryRelayStore } from './store/memory.js'
export type { SqliteCommitInfo, SqliteRelayStoreOptions } from './store/sqlite.js'
export { SQLITE_SCHEMA_VERSION, sqliteRelayStore } from './store/sqlite.js'
export type {
  AckOptions,
  DuplicateQuery,
  MailboxEntry,
  MailboxPage,
  PublishInput,
  RelayStore,
  StorePublishResult,
  Subscription,
  WebhookTarget,
} from './store/types.js'
// Stores
export { MailboxFullError, RelayStorageFullError } from './store/types.js'
