/**
 * The relay client: everything `src/index.ts` re-exports for the package root.
 */

export type { AckEntry } from './ack-batch.js'
export { MAX_ACK_BATCH } from './ack-batch.js'
export type { BackoffOptions } from './backoff.js'
export { DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, reconnectDelay } from './backoff.js'
export type { DrainOptions, DrainResult, RetrievedEntry } from './drain.js'
export {
  DEFAULT_TIMEOUT_MS,
  MAX_EVENT_BYTES,
  MAX_PAGE_RESPONSE_BYTES,
  MAX_REPLY_BYTES,
} from './http.js'
export type {
  FailoverAttempt,
  FailoverOptions,
  FailoverResult,
  PublishOptions,
  RelayPublishResult,
} from './publish.js'
export { MAX_PUBLISH_BYTES, publishToRelay, publishWithFailover } from './publish.js'
export type {
  ClientPublishOptions,
  RelayClient,
  RelayClientOptions,
  RetrieveOptions,
  RetrieveResult,
  SubscribeOptions,
} from './relay-client.js'
export { createRelayClient, DEFAULT_STREAM_IDLE_MS } from './relay-client.js'
export { RelayError } from './relay-error.js'
export type {
  RelayTransport,
  RelayTransportFactory,
  RelayTransportOptions,
} from './relay-transport.js'
export { relayTransport } from './relay-transport.js'
export type {
  RelayEntry,
  RelayStreamHandler,
  StreamHandle,
  StreamMode,
  StreamOptions,
} from './stream-types.js'
export type {
  WebSocketClientOptions,
  WebSocketConstructor,
  WebSocketLike,
} from './ws-stream.js'
export { relayWebSocketUrl } from './ws-stream.js'
