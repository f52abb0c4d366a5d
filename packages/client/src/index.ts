/**
 * @agentmsg/client — the Agent: identity, storage and transports composed into one object that
 * sends, replies and receives, and hides whether a message goes to an inbox or through relays.
 * Isomorphic (browsers and Node); the Node inbox lives in `@agentmsg/client/node`.
 *
 * @packageDocumentation
 */

export { fingerprint } from './agent/contacts.js'
export { createAgent } from './agent/create.js'
export type {
  Agent,
  AgentDeliveredEvent,
  AgentErrorEvent,
  AgentEvents,
  AgentListener,
  AgentOptions,
  AgentUndeliverableEvent,
  Contact,
  Contacts,
  Content,
  Group,
  IntroduceOptions,
  OwnIdentity,
  PinOptions,
  PublishOptions,
  PublishResult,
  ReceivedMessage,
  RelayTrust,
  Route,
  SendOptions,
  SendResult,
  SubscribeOptions,
  TransportKind,
} from './agent/types.js'
export { safeText } from './safe-text.js'
