/**
 * `@agentmsg/core/receive` — the parts of the one receive pipeline, for inboxes, relays and
 * agents that assemble their own: the pipeline itself, the key store and resolvers, auth
 * levels (PROFILE §5), the replay guard (PROFILE §6), identity documents fetched and cached
 * (PROFILE §4).
 *
 * @packageDocumentation
 */
export { AuthLevelTracker } from './auth-level.js'
export {
  createKeyResolver,
  IdentityDocumentCache,
  type IdentityDocumentResolverOptions,
  type IdentityFetchResult,
  identityDocumentResolver,
} from './identity-resolver.js'
export { introducedIdentity } from './introduction.js'
export { KeyStore } from './key-store.js'
export { receive } from './receive/pipeline.js'
export { createReceiver } from './receive/receiver.js'
export type {
  ErrorReplySender,
  ErrorReplyTarget,
  ReceiveContext,
  ReceivedInfo,
  ReceiveOpener,
  Receiver,
} from './receive/types.js'
export { ReplayGuard } from './replay.js'
export {
  chainResolvers,
  didKeyResolver,
  type KeyLookup,
  type KeyResolution,
  type KeyResolver,
  nonDocumentLookup,
} from './resolver.js'
export { verifyMessage } from './verify.js'
