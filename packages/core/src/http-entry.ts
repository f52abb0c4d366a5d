/**
 * `@agentmsg/core/http` — the HTTP toolkit every package uses on the sending side: one outbound
 * request with a deadline and capped reads, one body reader, PROFILE §6's `Retry-After` rule and
 * backoff, the status ↔ code table, PROFILE §4's address policy, and relay agent auth as a
 * client signs it (RFC 9421 requests, the WebSocket challenge answer, PROFILE §9). What servers
 * put in front of the receive pipeline is in `/receive`. Isomorphic.
 *
 * @packageDocumentation
 */
export { assertRelayUrl } from './agent-id.js'
export { concat } from './bytes.js'
export { ERROR_STATUS, invalidFormat } from './errors.js'
export { parseIp } from './http/address.js'
export {
  type AddressPolicy,
  AddressRefusedError,
  createAddressPolicy,
  isAddressRefusedError,
} from './http/address-policy.js'
export { readBody } from './http/body.js'
export {
  deadline,
  describeError,
  errorFromResponse,
  httpRequest,
  readJson,
} from './http/request.js'
export { Backoff, backoffDelay, parseRetryAfter, sleep } from './http/retry.js'
export { signRequest } from './http-signature/sign.js'
export { signWsAuth } from './http-signature/ws.js'
