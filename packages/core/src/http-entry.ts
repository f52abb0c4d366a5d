/**
 * `@agentmsg/core/http` — the wire toolkit every package uses: one outbound request with a
 * deadline and capped reads, one body reader, PROFILE §6's `Retry-After` rule and backoff, the
 * status ↔ code table, the byte encodings of PROFILE §1 (base64url, UTF-8, RFC 3339
 * timestamps), and what a relay-only agent needs before it can send (its keys, did:key, agent
 * ids, errors, `PROFILE`, namespaced storage; the root exports them too). Loaded up front by a
 * browser agent, so it holds nothing that only receiving, sending or serving needs (RFC 8785
 * and the signing input are the root's): a bundler loads up front every module an entry it
 * imports re-exports, used or not, so the agent's up-front code imports values from here, never
 * from the root. Isomorphic.
 *
 * @packageDocumentation
 */
export { getDefaultCryptoProvider } from '#crypto-default'
export { assertRelayUrl, normalizeAgentUrl, parseAgentId } from './agent-id.js'
export { base58btcDecode, base58btcEncode } from './base58.js'
export { base64Decode, base64Encode, base64urlDecode, base64urlEncode } from './base64url.js'
export { concat, constantTimeEqual, randomBytes, utf8Decode, utf8Encode } from './bytes.js'
export { didKeyFragment, didKeyFromPublicKey, isDidKey } from './did-key.js'
export { nonDocumentLookup } from './document-lookup.js'
export { AgentMsgError, ERROR_STATUS, invalidFormat, isAgentMsgError } from './errors.js'
export { readBody } from './http/body.js'
export {
  deadline,
  describeError,
  errorFromResponse,
  httpRequest,
  readJson,
} from './http/request.js'
export { Backoff, backoffDelay, parseRetryAfter, sleep } from './http/retry.js'
export { ed25519Signer, generateKeyPair, keyPairFromSeed } from './keys.js'
export { PROFILE } from './profile.js'
export { cloneJsonValue } from './storage/clone.js'
export { namespacedStorage } from './storage/namespace.js'
export { type TraceSpan, traced, useOpenTelemetry } from './telemetry.js'
export { formatTimestamp, parseTimestamp } from './timestamps.js'
