/**
 * Node-only parts of @agentmsg/transport-https: the https transport that can serve the agent's
 * inbox, an https-only fetch with a custom CA and the outbound address rules checked on the
 * connected address, and the one Node adapter for web-standard handlers (`getRequestListener`,
 * `serveHttps`). Everything of the isomorphic entry is re-exported, so Node code can import
 * from here alone.
 *
 * @packageDocumentation
 */
export * from './index.js'
export { createNodeFetch, type NodeFetchOptions } from './node-fetch.js'
export { getRequestListener, type ServeHttpsOptions, serveHttps } from './node-server.js'
// The Node transport (default fetch with the address rules; optional inbox server) replaces the
// isomorphic `httpsTransport` of the root entry.
export { type HttpsTransportOptions, httpsTransport } from './node-transport.js'
