/**
 * @agentmsg/a2a — A2A tasks carried by agentmsg: a client transport for `@a2a-js/sdk`'s
 * `ClientFactory` and an adapter that serves its request handler from an agentmsg agent, so A2A
 * agents reach each other through relays, with every message signed, sealed through untrusted
 * relays and durable. Isomorphic: the served agent may be a browser tab.
 *
 * @packageDocumentation
 */

export { type AgentmsgTransportOptions, agentmsgTransportFactory } from './client-transport.js'
export { type A2APush, agentmsgPushSender, onA2APush } from './push.js'
export {
  type A2ACaller,
  type A2AServer,
  callerOf,
  type ServeA2AOptions,
  serveA2A,
} from './server.js'
export {
  AGENTMSG_BINDING,
  AGENTMSG_REFUSED,
  type AgentmsgAddress,
  agentmsgInterface,
  parseAgentmsgUrl,
} from './wire.js'
