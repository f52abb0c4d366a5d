/**
 * @agentmsg/transport-https — direct HTTPS delivery (SPEC §4.1; PROFILE §6): the `https`
 * Transport (`httpsTransport`: an agent's inbox as a target, one POST per delivery), the
 * web-standard inbox handler, the identity-document fetcher, and `routeHandlers` for
 * frameworks whose routes take a `Request` (Next.js). Isomorphic; the Node-only
 * parts (an https-only fetch with the PROFILE §4 address rules, the Node adapter and server)
 * live in `@agentmsg/transport-https/node`.
 *
 * @packageDocumentation
 */
export { type HttpsTransportOptions, httpsTransport } from './https-transport.js'
export { createIdentityFetcher } from './identity-fetcher.js'
export { createInboxHandler } from './inbox/handler.js'
export type { InboxHandler, InboxHandlerOptions } from './inbox/types.js'
export { routeHandlers } from './route-handlers.js'
