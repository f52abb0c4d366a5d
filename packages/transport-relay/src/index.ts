/**
 * @agentmsg/transport-relay — the isomorphic relay client (PROFILE §9): publish with failover,
 * retrieve, ack, subscribe, push by SSE (fetch + eventsource-parser, so it can send the
 * signature headers) and WebSocket (global `WebSocket` in browsers, `ws` on Node), with every
 * delivered message verified before the application sees it. Also the RFC 9421 agent-auth
 * profile and the WebSocket first-frame challenge, shared with the relay server.
 *
 * @packageDocumentation
 */
export * from './client/index.js'
export * from './http-signature.js'
export * from './ws-auth.js'
