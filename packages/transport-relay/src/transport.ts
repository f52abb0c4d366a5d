/**
 * `@agentmsg/transport-relay/transport` — relays as a core `Transport` (`relayTransport`,
 * PROFILE §9) and nothing else of the relay client. A narrow entry for bundle size: esbuild
 * places a module by which entries reach it, even through exports nobody uses, so an agent
 * importing the root entry would load the relay client's retrieve, drain and page parsing up
 * front, and its streams, which `listen` otherwise imports when first called (issue 12). The
 * root entry exports `relayTransport` too.
 *
 * @packageDocumentation
 */
export type {
  RelayTransport,
  RelayTransportFactory,
  RelayTransportOptions,
} from './client/relay-transport.js'
export { relayTransport } from './client/relay-transport.js'
export type { StreamMode } from './client/stream-types.js'
export type {
  WebSocketClientOptions,
  WebSocketConstructor,
  WebSocketLike,
} from './client/ws-stream.js'
