/**
 * `relayTransport` alone: a bundler that splits code places a module by the entries that reach
 * it, so an agent importing the root would load the client's parsing and streams up front.
 * @packageDocumentation
 */
export {
  type RelayTransport,
  type RelayTransportOptions,
  relayTransport,
} from './client/relay-transport.js'
