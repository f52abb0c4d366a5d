/**
 * `@agentmsg/core/message` — what every agent needs to make, sign and address a message: agent
 * ids, did:key, Ed25519 keys and signers, introduction-token signers, message creation,
 * validation and signing, timestamps, errors, the transport and storage contracts and
 * `namespacedStorage`.
 *
 * A narrow entry for bundle size: it reaches none of the receive pipeline (`./receive`),
 * identity documents (`./identity`) or sealed boxes. esbuild (and bundlers like it) place a
 * module by which entries reach it, even through exports nobody uses, so a browser agent that
 * imported the root entry would load every part of core up front, including the parts it only
 * needs later (issue 12). The root entry exports all of this too.
 *
 * @packageDocumentation
 */

export { getDefaultCryptoProvider } from '#crypto-default'
export type { AgentId, AgentIdKind } from './agent-id.js'
export {
  agentEndpoints,
  assertRelayUrl,
  formatKeyId,
  isAgentId,
  normalizeAgentUrl,
  parseAgentId,
  splitKeyId,
} from './agent-id.js'
export type { CreateMessageOptions } from './create-message.js'
export { createMessage, createMessageId } from './create-message.js'
export type { CryptoMode, CryptoProvider } from './crypto/provider.js'
export { didKeyFragment, didKeyFromPublicKey, isDidKey, publicKeyFromDidKey } from './did-key.js'
export { nonDocumentLookup } from './document-lookup.js'
export type { AgentMsgErrorOptions, ErrorCode, ErrorPhaseCode } from './errors.js'
export { AgentMsgError, ERROR_STATUS, invalidFormat, isAgentMsgError } from './errors.js'
export type {
  IdentityDocument,
  IdentityEndpoints,
  IdentityKey,
  KeyStatus,
  RelayPreference,
} from './identity/document.js'
export type { AbortOptions } from './interfaces/abort.js'
export type { Storage, StorageListOptions, StorageOp } from './interfaces/storage.js'
export type {
  DeliveryEvent,
  DeliveryHandler,
  DeliveryOutcome,
  DeliveryReceipt,
  DeliveryTarget,
  InboundDelivery,
  Transport,
  TransportComponents,
  TransportFactory,
  TransportSendOptions,
} from './interfaces/transport.js'
export { createIntroductionToken, hmacSigner } from './introduction-token.js'
export { canonicalize, canonicalizeToBytes } from './jcs.js'
export type { KeyPair, Signer } from './keys.js'
export { ed25519Signer, generateKeyPair, keyPairFromSeed } from './keys.js'
export type { ProtocolError, ValidationResult } from './message.js'
export { validateMessage } from './message.js'
export type { SignOptions } from './sign.js'
export { requiredSignedHeaders, signMessage } from './sign.js'
export { namespacedStorage } from './storage/namespace.js'
export { formatTimestamp, isTimestamp, parseTimestamp } from './timestamps.js'
export type {
  AuthLevel,
  BodyPart,
  JsonObject,
  JsonValue,
  Message,
  Phase,
  SignatureAlg,
  SignatureObject,
  TraceEntry,
  UnsignedMessage,
} from './types.js'
export { PHASES } from './types.js'
