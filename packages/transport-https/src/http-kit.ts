/**
 * `@agentmsg/transport-https/http-kit` — the HTTP building blocks of the inbox, for servers
 * that accept agentmsg traffic with the same rules (the relay uses them): streaming
 * size-limited body reads, client-address bucketing with trusted proxies, token buckets and
 * read caps per address (`ClientLimits`), Content-Type checks, JSON/CORS replies (PROFILE §6).
 * Isomorphic.
 *
 * @packageDocumentation
 */
export { AddressSet, addressBucket, clientAddress } from './inbox/address.js'
export type { ReadLimitedOptions } from './inbox/body.js'
export { discardBody, MAX_BODY_BYTES, onBodyDone, readLimited } from './inbox/body.js'
export type { ClientLimitsOptions, ReleaseRead } from './inbox/client-limits.js'
export { ClientLimits, MissingClientAddressError } from './inbox/client-limits.js'
export { isJsonContentType } from './inbox/content-type.js'
export { CORS_ALLOW_HEADERS, preflightReply } from './inbox/cors.js'
export type { RateLimit } from './inbox/rate-limit.js'
export { TokenBuckets } from './inbox/rate-limit.js'
export type { ErrorReplyOptions, HttpReply } from './inbox/responses.js'
export {
  acceptedReply,
  CORS_RESPONSE_HEADERS,
  errorReply,
  jsonReply,
  toResponse,
} from './inbox/responses.js'
