/**
 * `@agentmsg/core/http-signature` — relay agent auth (PROFILE §9), shared by the relay client
 * and the relay server: RFC 9421 HTTP Message Signatures restricted to one shape, and the
 * WebSocket first-frame challenge.
 *
 * ```
 * Content-Digest: sha-256=:<base64 of SHA-256(body)>:          (only with a body, RFC 9530)
 * Signature-Input: sig1=("@method" "@target-uri" "content-digest");created=1700000000;nonce="…";keyid="…";alg="ed25519"
 * Signature: sig1=:<base64 of the 64-byte Ed25519 signature>:
 * ```
 *
 * The verifier parses fields with `structured-headers` (RFC 8941); the signer spells its one
 * shape by hand (./sf-write.ts), which the tests hold to the same serialisation. The verifier
 * accepts the four parameters in any order and rebuilds `@signature-params` by serialising
 * what it parsed (RFC 9421 §2.3), so stock RFC 9421 libraries interoperate; `@target-uri`
 * comes from the caller: the relay base URL + the request target as received. Isomorphic: no
 * Node built-ins.
 *
 * @packageDocumentation
 */
export {
  contentDigest,
  createRequestNonce,
  MAX_CREATED_SKEW_MS,
  NONCE_RETENTION_MS,
  SIGNATURE_LABEL,
  signatureBase,
} from './components.js'
export type { HeaderInput } from './fields.js'
export { NonceMemory, type NonceMemoryOptions } from './nonces.js'
export { type SignRequestInput, signRequest } from './sign.js'
export { type VerifiedRequest, type VerifyRequestInput, verifyRequest } from './verify.js'
export {
  createChallenge,
  type SignWsAuthInput,
  signWsAuth,
  type VerifiedWsAuth,
  type VerifyWsAuthInput,
  verifyWsAuth,
  WS_AUTH_CONTEXT,
  type WsAuthFrame,
  type WsChallengeFrame,
  wsAuthPayload,
} from './ws-challenge.js'
