/**
 * `@agentmsg/transport-relay/transport` — `relayTransport` alone. An agent that imports it from
 * here loads neither the client's retrieve and page parsing nor its streams up front: a bundler
 * that splits code places a module by the entries that reach it, even through unused exports.
 *
 * @packageDocumentation
 */
export {
  type RelayTransport,
  type RelayTransportOptions,
  relayTransport,
} from './client/relay-transport.js'
