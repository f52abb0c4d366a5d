/**
 * `relayTransport` alone. Code splitting groups modules by the entries that reach them: built
 * from the root only, what sending needs shares chunks with the streams and parsing that
 * listening loads later, and a bundle taking `relayTransport` from the root loads them up front.
 * @packageDocumentation
 */
export {
  type RelayTransport,
  type RelayTransportOptions,
  relayTransport,
} from './client/relay-transport.js'
