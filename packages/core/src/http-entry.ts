/**
 * `@agentmsg/core/http` — the HTTP toolkit every package uses (one outbound request with a
 * deadline and capped reads, one body reader, PROFILE §6's `Retry-After` rule and backoff, one
 * status ↔ code table) and relay agent auth (PROFILE §9): RFC 9421 request signatures and the
 * WebSocket first-frame challenge. Isomorphic.
 *
 * @packageDocumentation
 */
export { assertRelayUrl } from './agent-id.js'
export { concat } from './bytes.js'
export { ERROR_STATUS, invalidFormat } from './errors.js'
export { AddressSet, parseIp } from './http/address.js'
export {
  type AddressPolicy,
  AddressRefusedError,
  createAddressPolicy,
  isAddressRefusedError,
} from './http/address-policy.js'
export { discardBody, onBodyDone, readBody } from './http/body.js'
export {
  ClientLimits,
  type RateLimit,
  TokenBuckets,
} from './http/client-limits.js'
export {
  acceptedReply,
  errorReply,
  type HttpReply,
  isJsonContentType,
  jsonReply,
  preflightReply,
  toResponse,
} from './http/replies.js'
export {
  deadline,
  describeError,
  errorFromResponse,
  httpRequest,
  readJson,
} from './http/request.js'
export { Backoff, backoffDelay, parseRetryAfter, sleep } from './http/retry.js'
export { NonceMemory } from './http-signature/nonces.js'
export { signRequest } from './http-signature/sign.js'
export { verifyRequest } from './http-signature/verify.js'
export { createChallenge, signWsAuth, verifyWsAuth } from './http-signature/ws.js'
