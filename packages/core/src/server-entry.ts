/**
 * `@agentmsg/core/server` — what inboxes and relays put in front of the receive pipeline: the
 * per-client-address limits and JSON replies of PROFILE §6, trusted proxies, relay agent auth
 * as the relay verifies it (RFC 9421 requests, the WebSocket challenge, nonce memory; PROFILE
 * §9), and the PROFILE §4 address policy that servers and Node agents dial with. Apart from
 * `/receive` so that a browser agent that receives from relays does not load it.
 *
 * @packageDocumentation
 */
export { AddressSet, parseIp } from './http/address.js'
export {
  type AddressPolicy,
  AddressRefusedError,
  createAddressPolicy,
  isAddressRefusedError,
} from './http/address-policy.js'
export { discardBody, onBodyDone } from './http/body.js'
export { ClientLimits, type RateLimit, TokenBuckets } from './http/client-limits.js'
export {
  acceptedReply,
  errorReply,
  type HttpReply,
  isJsonContentType,
  jsonReply,
  preflightReply,
  toResponse,
} from './http/replies.js'
export { NonceMemory } from './http-signature/nonces.js'
export { verifyRequest } from './http-signature/verify.js'
export { createChallenge, verifyWsAuth } from './http-signature/ws.js'
export { canonicalSize } from './jcs.js'
