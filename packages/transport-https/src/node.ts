/**
 * Node-only parts of @agentmsg/transport-https: the `node:https` inbox server, an https-only
 * fetch with a custom CA and the outbound address rules checked on the connected address, and
 * development certificates. Everything of the isomorphic entry is re-exported, so Node code can
 * import from here alone.
 *
 * @packageDocumentation
 */

export * from './index.js'
export { readNodeBody } from './node-exchange.js'
export type { NodeFetchOptions, NodeIdentityFetcherOptions } from './node-fetch.js'
export { createNodeFetch, createNodeIdentityFetcher } from './node-fetch.js'
export type {
  FetchHandler,
  InboxServer,
  RequestListenerOptions,
  ServeInboxOptions,
  SlowClientTimeouts,
} from './node-server.js'
export { getRequestListener, serveInbox, slowClientServerOptions } from './node-server.js'
export { bodyDeadline } from './node-timeouts.js'
export type {
  HttpsInboxOptions,
  NodeHttpsTransport,
  NodeHttpsTransportFactory,
  NodeHttpsTransportOptions,
} from './node-transport.js'
// The Node transport (default fetch with the address rules; optional inbox server) replaces the
// isomorphic `httpsTransport` of the root entry.
export { httpsTransport } from './node-transport.js'
