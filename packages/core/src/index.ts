/**
 * @agentmsg/core — agent ids, did:key, identity documents, RFC 8785 canonical form,
 * Ed25519/HMAC signatures, authentication levels, replay protection. Isomorphic: no Node
 * built-ins; the crypto provider is picked per platform through package conditions.
 *
 * @packageDocumentation
 */

// Crypto providers (the pure-JS one is at `@agentmsg/core/noble`)
export { getDefaultCryptoProvider } from '#crypto-default'
export type { AgentId, AgentIdKind } from './agent-id.js'
// Identifiers, keys and identity documents
export {
  agentEndpoints,
  assertRelayUrl,
  formatKeyId,
  isAgentId,
  normalizeAgentUrl,
  parseAgentId,
  splitKeyId,
} from './agent-id.js'
export type { AuthDecision, KeySource } from './auth-level.js'
// Trust state
export { AuthLevelTracker, levelForKeySource } from './auth-level.js'
export type { CreateMessageOptions } from './create-message.js'
// Messages, signatures, verification
export { createMessage, createMessageId } from './create-message.js'
export type { CreateKeyResolverOptions } from './create-resolver.js'
export { createKeyResolver } from './create-resolver.js'
export type { CryptoMode, CryptoProvider } from './crypto/provider.js'
export { createWebCryptoProvider, webCryptoSupportsEd25519 } from './crypto/web.js'
export { didKeyFragment, didKeyFromPublicKey, isDidKey, publicKeyFromDidKey } from './did-key.js'
export type { ErrorMessageOptions } from './error-message.js'
export { createErrorMessage, ErrorReplyGate } from './error-message.js'
export type { AgentMsgErrorOptions, ErrorCode, ErrorPhaseCode } from './errors.js'
// Errors
export { AgentMsgError, ERROR_STATUS, invalidFormat, isAgentMsgError } from './errors.js'
export type { IdentityDocument, IdentityKey, KeyStatus, RelayPreference } from './identity.js'
export {
  checkKeyUsable,
  createIdentityDocument,
  DEFAULT_TRANSITION_MS,
  publicKeyOf,
  revokeKey,
  rotateKey,
  validateIdentityDocument,
} from './identity.js'
export type {
  IdentityDocumentResolverOptions,
  IdentityFetcher,
  IdentityFetchResult,
} from './identity-resolver.js'
export {
  didKeyResolver,
  IdentityDocumentCache,
  identityDocumentResolver,
} from './identity-resolver.js'
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
export {
  createIntroductionToken,
  hmacSigner,
  introducedIdentity,
  introductionFragment,
} from './introduction.js'
// Canonical form and wire formats (byte/text encodings are at `@agentmsg/core/encoding`)
export { canonicalize, canonicalizeToBytes } from './jcs.js'
export type { StoredKey } from './key-store.js'
export { KeyStore } from './key-store.js'
export type { KeyPair, Signer } from './keys.js'
export { ed25519Signer, generateKeyPair, keyPairFromSeed } from './keys.js'
export type { ProtocolError, ValidationResult } from './message.js'
export { validateMessage } from './message.js'
// Receive pipeline (PROFILE §6): one `receive` for every transport, and an agent's receiver
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
export type { ResolvedEd25519Key, ResolveEd25519KeyOptions } from './resolve-key.js'
export { resolveEd25519Key } from './resolve-key.js'
export type { KeyLookup, KeyResolution, KeyResolver, ResolvedKey } from './resolver.js'
// Key resolution and introductions
export { chainResolvers } from './resolver.js'
export type { SignOptions } from './sign.js'
export { requiredSignedHeaders, signMessage } from './sign.js'
export { buildSigningInput } from './signing-input.js'
// Storage
export { memoryStorage } from './storage/memory.js'
export { namespacedStorage } from './storage/namespace.js'
export type { NonIntegerLiteral, StrictJsonOptions } from './strict-json.js'
export {
  INTEGER_MEMBERS,
  nonIntegerLiteral,
  parseStrictJson,
  parseStrictJsonAsync,
} from './strict-json.js'
export { formatTimestamp, isTimestamp, parseTimestamp } from './timestamps.js'
// Types and contracts
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
export type { VerifiedSignature, VerifyOptions, VerifyResult } from './verify.js'
export { verifyMessage } from './verify.js'
