/**
 * @agentmsg/transport-https — direct HTTPS delivery (SPEC §4.1; PROFILE §6): a web-standard
 * inbox handler and a sender with a durable outbox. Isomorphic; Node-only parts (the
 * `node:https` server, an https-only fetch with the outbound address rules, development
 * certificates) live in `@agentmsg/transport-https/node`.
 *
 * @packageDocumentation
 */

// Inbox
export { createInboxHandler, MAX_BODY_BYTES } from './inbox/handler.js'
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
export { defaultCapabilities, MAX_MESSAGE_BYTES } from './inbox/capabilities.js'
export { isJsonContentType } from './inbox/content-type.js'
export { CORS_ALLOW_HEADERS } from './inbox/cors.js'
export type { RateLimit } from './inbox/rate-limit.js'

// Sender
export { createSender, DeliveryError } from './sender.js'
export type {
  DeliveredEvent,
  FailedEvent,
  HttpsSender,
  RetryEvent,
  SenderErrorEvent,
  SenderEvents,
  SenderOptions,
  UndeliverableEvent,
} from './sender.js'
export { Outbox } from './outbox.js'
export type { OutboxEntry, OutboxOptions } from './outbox.js'
export {
  backoffDelay,
  classifyResponse,
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_DEADLINE_MS,
  nextAttemptAt,
  RETRY_BASE_MS,
  RETRY_CAP_MS,
} from './retry.js'
export { createManualClock, systemClock } from './clock.js'
export type { Clock, ManualClock } from './clock.js'

// Outbound policy and identity documents
export {
  AddressRefusedError,
  createAddressPolicy,
  isAddressRefusedError,
  isPublicUnicast,
  parseCidr,
  parseIp,
} from './address-policy.js'
export type { AddressPolicy, AddressPolicyOptions, Cidr, ParsedIp } from './address-policy.js'
export { createIdentityFetcher } from './identity-fetcher.js'
export type { IdentityFetcherOptions } from './identity-fetcher.js'
