/**
 * @agentmsg/transport-relay — relays as a core `Transport` (`relayTransport`, PROFILE §9) and
 * the relay client under it: publish with failover, subscribe, retrieve, acknowledge, and the
 * agent's mailboxes streamed over SSE (fetch and a byte-level parser, so the signature headers
 * can be sent) or WebSocket. Every answer is read under PROFILE §4's byte caps and timeouts.
 * Isomorphic.
 *
 * @packageDocumentation
 */
export { type PublishOptions, publishToRelay } from './client/publish.js'
export { createRelayClient, type RelayClient } from './client/relay-client.js'
export type { RelayClientOptions } from './client/relay-core.js'
export { RelayError } from './client/relay-error.js'
export type { RelayEntry, StreamHandle, StreamMode, StreamOptions } from './client/stream-types.js'
export type { WebSocketClientOptions, WebSocketConstructor } from './client/ws-stream.js'
export * from './transport.js'
