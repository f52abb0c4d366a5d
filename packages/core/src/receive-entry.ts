/**
 * `@agentmsg/core/receive` — everything on the receiving side, which a browser agent loads only
 * when it starts receiving: `verifyMessage`, the one receive pipeline (`createReceiver`,
 * `receive`) and its parts (key store, resolvers, auth levels of PROFILE §5, the replay guard of
 * PROFILE §6), strict I-JSON parsing (PROFILE §1), and relay agent auth as a client signs to
 * read its mailbox (RFC 9421 requests, the WebSocket challenge, PROFILE §9).
 *
 * @packageDocumentation
 */
export { AuthLevelTracker } from './auth-level.js'
export { signRequest, signWsAuth } from './http-signature/sign.js'
export { introducedIdentity, KeyStore } from './key-store.js'
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
export { INTEGER_MEMBERS } from './strict-json/prepare.js'
export { parseStrictJson } from './strict-json.js'
export { parseStrictJsonAsync } from './strict-json-async.js'
export { verifyMessage } from './verify.js'
