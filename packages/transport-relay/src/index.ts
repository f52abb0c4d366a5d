/**
 * @agentmsg/transport-relay — relays (PROFILE §9) as a core `Transport`, and the relay client
 * under it. Isomorphic. An agent imports `relayTransport` from `./transport` (see there).
 * @packageDocumentation
 */
export { type PublishOptions, publishToRelay } from './client/publish.js'
export { createRelayClient, type RelayClient } from './client/relay-client.js'
export type { RelayClientOptions } from './client/relay-core.js'
export { RelayError } from './client/relay-error.js'
export type { RelayEntry, StreamHandle, StreamMode, StreamOptions } from './client/stream-types.js'
export type { WebSocketClientOptions, WebSocketConstructor } from './client/ws-stream.js'
export * from './transport.js'
