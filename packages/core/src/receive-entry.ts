/**
 * `@agentmsg/core/receive` — verifying and receiving: `verifyMessage`, key resolution
 * (`createKeyResolver`), the one receive pipeline (`createReceiver`, `receive`) and its parts
 * (key store, auth levels of PROFILE §5, the replay guard of PROFILE §6), and identity documents
 * (create, rotate, validate; fetched and cached, PROFILE §4).
 *
 * @packageDocumentation
 */
export { AuthLevelTracker } from './auth-level.js'
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
  nonDocumentLookup,
} from './resolver.js'
export { verifyMessage } from './verify.js'
