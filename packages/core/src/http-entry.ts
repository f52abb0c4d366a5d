/**
 * `@agentmsg/core/http` — the wire toolkit every package uses: one outbound request with a
 * deadline and capped reads, one body reader, PROFILE §6's `Retry-After` rule and backoff, the
 * status ↔ code table, and the byte encodings of PROFILE §1 (base64url, UTF-8, RFC 8785 bytes,
 * RFC 3339 timestamps). Loaded up front by a browser agent, so it holds nothing that only
 * receiving or serving needs (those are `/receive` and `/server`: a bundler loads up front
 * whatever an entry it imports re-exports). Isomorphic.
 *
 * @packageDocumentation
 */
export { assertRelayUrl } from './agent-id.js'
export { base58btcDecode, base58btcEncode } from './base58.js'
export { base64Decode, base64Encode, base64urlDecode, base64urlEncode } from './base64url.js'
export { concat, constantTimeEqual, randomBytes, utf8Decode, utf8Encode } from './bytes.js'
export { ERROR_STATUS, invalidFormat } from './errors.js'
export { readBody } from './http/body.js'
export {
  deadline,
  describeError,
  errorFromResponse,
  httpRequest,
  readJson,
} from './http/request.js'
export { Backoff, backoffDelay, parseRetryAfter, sleep } from './http/retry.js'
export { canonicalizeToBytes, canonicalSize } from './jcs.js'
export { buildSigningInput } from './sign.js'
export { cloneJsonValue } from './storage/clone.js'
export { type TraceSpan, traced, useOpenTelemetry } from './telemetry.js'
export { formatTimestamp, parseTimestamp } from './timestamps.js'
