/**
 * @agentmsg/core — what every agent loads up front to write and send: agent ids, did:key, RFC
 * 8785 canonical form, Ed25519 and HMAC signing, errors, `PROFILE`, and the `Storage` /
 * `Transport` contracts. Isomorphic: no Node built-ins; the crypto provider is picked per
 * platform through package conditions. The other entries: `/receive` (verifying and receiving:
 * the pipeline and its parts), `/identity` (identity documents and key resolution), `/http`
 * (the wire toolkit), `/server` (what inboxes and relays put in front of the pipeline),
 * `/sealed-box`. They are separate so that a browser
 * bundle loads the receive side only when it is first needed: a bundler cannot leave behind
 * what an entry re-exports.
 *
 * @packageDocumentation
 */

export { getDefaultCryptoProvider } from '#crypto-default'
export { agentEndpoints, normalizeAgentUrl, parseAgentId } from './agent-id.js'
export { type CreateMessageOptions, createMessage, createMessageId } from './create-message.js'
export { type CryptoProvider, loadNobleCryptoProvider } from './crypto/provider.js'
export { createWebCryptoProvider, webCryptoSupportsEd25519 } from './crypto/web.js'
export { didKeyFragment, didKeyFromPublicKey, isDidKey, publicKeyFromDidKey } from './did-key.js'
export { nonDocumentLookup } from './document-lookup.js'
export type { ErrorCode } from './errors.js'
export { AgentMsgError, isAgentMsgError } from './errors.js'
export type { IdentityDocument } from './identity/document.js'
export type { IdentityFetcher } from './identity-resolver.js'
export type { AbortOptions, Storage, StorageListOptions, StorageOp } from './interfaces/storage.js'
export type {
  DeliveryEvent,
  DeliveryHandler,
  DeliveryOutcome,
  DeliveryReceipt,
  DeliveryTarget,
  InboundDelivery,
  PeerRoute,
  Transport,
  TransportComponents,
  TransportFactory,
} from './interfaces/transport.js'
export { createIntroductionToken, hmacSigner } from './introduction-token.js'
export { canonicalize } from './jcs.js'
export type { KeyPair, Signer } from './keys.js'
export { ed25519Signer, generateKeyPair, keyPairFromSeed } from './keys.js'
export { parseMessageId, validateMessage } from './message.js'
export { PROFILE } from './profile.js'
export type { ReceivedInfo, Receiver, Sealed } from './receive/types.js'
export type { KeyResolver } from './resolver.js'
export { signMessage } from './sign.js'
export { memoryStorage } from './storage/memory.js'
export { namespacedStorage } from './storage/namespace.js'
export type { AuthLevel, BodyPart, JsonValue, Message, Phase } from './types.js'
