/**
 * The relay client: everything `src/index.ts` re-exports for the package root.
 */
export { backoffDelay, DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS } from './backoff.js'
export type { BackoffOptions } from './backoff.js'
export { parseRetryAfter } from './http.js'
export { MAX_PUBLISH_BYTES, publishToRelay, publishWithFailover } from './publish.js'
export type {
  FailoverAttempt,
  FailoverOptions,
  FailoverResult,
  PublishOptions,
  PublishResult,
  RelayPreference,
} from './publish.js'
export { createRelayClient } from './relay-client.js'
export type {
  ClientPublishOptions,
  RelayClient,
  RelayClientOptions,
  RetrieveOptions,
  RetrieveResult,
  SubscribeOptions,
} from './relay-client.js'
export { relayTransport } from './relay-transport.js'
export type { RelayTransport, RelayTransportOptions } from './relay-transport.js'
export type {
  RelayDelivery,
  RelayHandler,
  StreamHandle,
  StreamMode,
  StreamOptions,
} from './stream.js'
export { checkDelivered } from './verify-delivery.js'
export type { CheckedDelivery, RejectedDelivery } from './verify-delivery.js'
export { relayWebSocketUrl } from './ws-stream.js'
export type { WebSocketConstructor, WebSocketLike } from './ws-stream.js'
