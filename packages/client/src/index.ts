/**
 * @agentmsg/client — the Agent: identity, storage and transports composed into one object that
 * sends, replies and receives, and hides whether a message goes to an inbox or through relays.
 * Isomorphic (browsers and Node); the Node inbox lives in `@agentmsg/client/node`.
 *
 * @packageDocumentation
 */
export { createAgent, fingerprint, STORAGE_KEYS } from './agent.js'
export type {
  Agent,
  AgentErrorEvent,
  AgentEvents,
  AgentListener,
  AgentOptions,
  Contact,
  Contacts,
  Content,
  DeliveredEvent,
  OwnIdentity,
  PinOptions,
  ReceivedMessage,
  Route,
  SendOptions,
  SendResult,
  TransportKind,
  UndeliverableEvent,
} from './agent.js'
