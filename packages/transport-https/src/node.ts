/**
 * Node-only parts of @agentmsg/transport-https: the `node:https` inbox server, an https-only
 * fetch with a custom CA and the outbound address rules checked on the connected address, and
 * development certificates. Everything of the isomorphic entry is re-exported, so Node code can
 * import from here alone.
 *
 * @packageDocumentation
 */
export * from './index.js'
export { getRequestListener, serveInbox } from './node-server.js'
export type {
  FetchHandler,
  InboxServer,
  RequestListenerOptions,
  ServeInboxOptions,
} from './node-server.js'
export { createNodeFetch, createNodeIdentityFetcher } from './node-fetch.js'
export type { NodeFetchOptions, NodeIdentityFetcherOptions } from './node-fetch.js'
export { createDevCertificate } from './dev-cert.js'
export type { DevCertificate, DevCertificateOptions } from './dev-cert.js'
