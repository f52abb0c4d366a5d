/**
 * `@agentmsg/core/receive` — the receive side (PROFILE §6): `createReceiver` and the `receive`
 * pipeline, signature verification, replay protection, authentication levels, the key store
 * (pins, introductions), key resolvers for did:key agents, and the strict JSON of PROFILE §1
 * (`parseStrictJsonAsync`: the synchronous `parseStrictJson` is at `@agentmsg/core/strict-json`
 * and in the root entry, as it carries the exact parser up front).
 *
 * A narrow entry for bundle size (see `@agentmsg/core/message`): an agent loads it when it
 * starts receiving. Identity documents (URL agents) are at `@agentmsg/core/identity`. The root
 * entry exports all of this too.
 *
 * @packageDocumentation
 */

export type { AuthDecision, KeySource } from './auth-level.js'
export { AuthLevelTracker, levelForKeySource } from './auth-level.js'
export { didKeyResolver } from './did-key-resolver.js'
export type { StoredKey } from './key-store.js'
export { KeyStore } from './key-store.js'
export { receive } from './receive/pipeline.js'
export { createReceiver } from './receive/receiver.js'
export { MAX_MESSAGE_BYTES } from './receive/steps.js'
export type {
  ErrorReplySender,
  ErrorReplyTarget,
  ReceiveContext,
  ReceivedDuplicate,
  ReceivedInfo,
  ReceivedOk,
  ReceiveInput,
  ReceiveOpener,
  ReceiveRefusal,
  ReceiveResult,
  Receiver,
  ReceiverOptions,
  ReceiveStep,
} from './receive/types.js'
export { ReplayGuard } from './replay.js'
export type { KeyLookup, KeyResolution, KeyResolver, ResolvedKey } from './resolver.js'
export { chainResolvers } from './resolver.js'
export type { NonIntegerLiteral } from './strict-json/integers.js'
export { nonIntegerLiteral } from './strict-json/integers.js'
export { INTEGER_MEMBERS, type StrictJsonOptions } from './strict-json/prepare.js'
export { parseStrictJsonAsync } from './strict-json-async.js'
export type { VerifiedSignature, VerifyOptions, VerifyResult } from './verify.js'
export { verifyMessage } from './verify.js'
