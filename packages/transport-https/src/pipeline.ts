/**
 * `@agentmsg/transport-https/pipeline` — the inbox's building blocks, for servers that accept
 * agentmsg traffic with the same rules (the relay reuses them): streaming size-limited body
 * reads, client-address bucketing with trusted proxies, token buckets, JSON/CORS replies.
 * Isomorphic.
 *
 * @packageDocumentation
 */
export { AddressSet, addressBucket, clientAddress } from './inbox/address.js'
export { discardBody, readLimited } from './inbox/body.js'
export { CORS_ALLOW_HEADERS, preflightReply } from './inbox/cors.js'
export { TokenBuckets } from './inbox/rate-limit.js'
export type { RateLimit } from './inbox/rate-limit.js'
export {
  acceptedReply,
  CORS_RESPONSE_HEADERS,
  errorReply,
  jsonReply,
  toResponse,
} from './inbox/responses.js'
export type { ErrorReplyOptions, InboxReply } from './inbox/responses.js'
