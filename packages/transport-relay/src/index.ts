/**
 * @agentmsg/transport-relay — relays as a core `Transport` (`relayTransport`, PROFILE §9):
 * publish with failover, and the agent's mailboxes streamed into its receive pipeline by SSE
 * (fetch + a byte-level event parser, so it can send the signature headers) or WebSocket
 * (global `WebSocket` in browsers, `ws` on Node), acknowledged per the pipeline's outcome (SSE
 * in `POST /relay/ack` batches). Also the relay client underneath (retrieve, drain, ack,
 * subscribe, streams). Every answer is read under the byte caps and timeouts of PROFILE §4.
 * Isomorphic. Requests are signed with the RFC 9421 agent-auth profile of
 * `@agentmsg/core/http-signature` (PROFILE §9).
 *
 * @packageDocumentation
 */
export * from './client/index.js'
