/**
 * `@agentmsg/core/receive` — the parts of the one receive pipeline, for inboxes, relays and
 * agents that assemble their own: the pipeline itself, the key store and resolvers, auth
 * levels (PROFILE §5), the replay guard (PROFILE §6), identity documents fetched and cached
 * (PROFILE §4).
 *
 * @packageDocumentation
 */
export type { KeySource } from './auth-level.js'
export { AuthLevelTracker } from './auth-level.js'
export { createKeyResolver } from './create-resolver.js'
export { didKeyResolver } from './did-key-resolver.js'
export { nonDocumentLookup } from './document-lookup.js'
export type { IdentityDocumentResolverOptions, IdentityFetchResult } from './identity-resolver.js'
export { IdentityDocumentCache, identityDocumentResolver } from './identity-resolver.js'
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
  ReceiveResult,
  Receiver,
  ReceiverOptions,
} from './receive/types.js'
export { ReplayGuard } from './replay.js'
export type { KeyLookup, KeyResolution, KeyResolver } from './resolver.js'
export { chainResolvers } from './resolver.js'
export type { VerifyResult } from './verify.js'
export { verifyMessage } from './verify.js'
