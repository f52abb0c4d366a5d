/**
 * `@agentmsg/core/receive` — verifying and receiving: `verifyMessage`, key resolution
 * (`createKeyResolver`), the one receive pipeline (`createReceiver`, `receive`) and its parts
 * (key store, auth levels of PROFILE §5, the replay guard of PROFILE §6), identity documents
 * (create, rotate, validate; fetched and cached, PROFILE §4), and what inboxes and relays put in
 * front of the pipeline (per-address limits and replies of PROFILE §6, relay agent auth as the
 * relay verifies it, PROFILE §9).
 *
 * @packageDocumentation
 */
export { AuthLevelTracker } from './auth-level.js'
export { AddressSet } from './http/address.js'
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
export { createIdentityDocument, revokeKey, rotateKey } from './identity/create.js'
export { validateIdentityDocument } from './identity/document.js'
export {
  createKeyResolver,
  IdentityDocumentCache,
  identityDocumentResolver,
} from './identity-resolver.js'
export { introducedIdentity } from './introduction.js'
export { KeyStore } from './key-store.js'
export { receive } from './receive/pipeline.js'
export { createReceiver } from './receive/receiver.js'
export type {
  ErrorReplySender,
  ReceiveContext,
  ReceivedInfo,
  Receiver,
} from './receive/types.js'
export { ReplayGuard } from './replay.js'
export {
  chainResolvers,
  didKeyResolver,
  type KeyResolver,
} from './resolver.js'
export { verifyMessage } from './verify.js'
