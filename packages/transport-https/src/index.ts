/**
 * @agentmsg/transport-https — direct HTTPS delivery (SPEC §4.1; PROFILE §6): a web-standard
 * inbox handler, and the `https` Transport (`httpsTransport`) over a sender with a durable outbox. Isomorphic; Node-only parts (the
 * `node:https` server, an https-only fetch with the outbound address rules, development
 * certificates) live in `@agentmsg/transport-https/node`.
 *
 * @packageDocumentation
 */

export type { AddressPolicy, AddressPolicyOptions, Cidr, ParsedIp } from './address-policy.js'
// Outbound policy and identity documents
export {
  AddressRefusedError,
  createAddressPolicy,
  isAddressRefusedError,
  isPublicUnicast,
  parseCidr,
  parseIp,
} from './address-policy.js'
export type { Clock, ManualClock } from './clock.js'
export { createManualClock, systemClock } from './clock.js'
export type { DeliveryOutcomeKind } from './delivery-error.js'
export { DeliveryError } from './delivery-error.js'
export type {
  HttpsTransport,
  HttpsTransportFactory,
  HttpsTransportOptions,
  WebInboxOptions,
} from './https-transport.js'
// Transport and sender
export { httpsTransport } from './https-transport.js'
export type { IdentityFetcherOptions } from './identity-fetcher.js'
export { createIdentityFetcher } from './identity-fetcher.js'
export { defaultCapabilities } from './inbox/capabilities.js'
export { isJsonContentType } from './inbox/content-type.js'
export { CORS_ALLOW_HEADERS } from './inbox/cors.js'
// Inbox
export { createInboxHandler, MAX_BODY_BYTES } from './inbox/handler.js'
export type { RateLimit } from './inbox/rate-limit.js'
export type {
  ErrorReplySender,
  ErrorReplyTarget,
  InboxCloseOptions,
  InboxHandler,
  InboxHandlerOptions,
  InboxLimits,
  InboxMessageInfo,
  InboxRequestInfo,
} from './inbox/types.js'
export type { OutboxEntry, OutboxOptions } from './outbox.js'
export { Outbox } from './outbox.js'
export {
  classifyResponse,
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_DEADLINE_MS,
  nextAttemptAt,
  RETRY_BASE_MS,
  RETRY_CAP_MS,
  retryDelay,
} from './retry.js'
export { createSender } from './sender.js'
export type {
  FailedEvent,
  HttpsSender,
  OutboxDeliveredEvent,
  OutboxUndeliverableEvent,
  RetryEvent,
  SenderErrorEvent,
  SenderEvents,
  SenderOptions,
} from './sender-types.js'
