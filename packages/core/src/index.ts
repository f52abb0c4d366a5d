/**
 * @agentmsg/core — agent ids, did:key, identity documents, RFC 8785 canonical form,
 * Ed25519/HMAC signatures, authentication levels, replay protection. Isomorphic: no Node
 * built-ins; the crypto provider is picked per platform through package conditions.
 *
 * @packageDocumentation
 */

// Errors
export { AgentMsgError, ERROR_STATUS, isAgentMsgError, invalidFormat } from './errors.js'
export type { AgentMsgErrorOptions, ErrorCode, ErrorPhaseCode } from './errors.js'

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
export type { AbortOptions } from './interfaces/abort.js'
export type { Storage, StorageListOptions, StorageOp } from './interfaces/storage.js'
export type {
  DeliveryReceipt,
  DeliveryTarget,
  InboundDelivery,
  Transport,
  TransportFactory,
} from './interfaces/transport.js'
export type { KeyLookup, KeyResolution, KeyResolver, ResolvedKey } from './resolver.js'
export type { CryptoProvider } from './crypto/provider.js'

// Encodings and canonical form
export { base64Decode, base64Encode, base64urlDecode, base64urlEncode } from './base64url.js'
export { constantTimeEqual, hexDecode, hexEncode, randomBytes, utf8Decode, utf8Encode } from './bytes.js'
export { canonicalize, canonicalizeToBytes } from './jcs.js'
export { parseStrictJson } from './strict-json.js'
export { formatTimestamp, isTimestamp, parseTimestamp } from './timestamps.js'

// Crypto providers (the pure-JS one is at `@agentmsg/core/noble`)
export { getDefaultCryptoProvider } from '#crypto-default'
export { createWebCryptoProvider, webCryptoSupportsEd25519 } from './crypto/web.js'

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
export type { AgentId, AgentIdKind } from './agent-id.js'
export {
  base58btcDecode,
  base58btcEncode,
  didKeyFragment,
  didKeyFromPublicKey,
  isDidKey,
  publicKeyFromDidKey,
} from './did-key.js'
export { ed25519Signer, generateKeyPair, keyPairFromSeed } from './keys.js'
export type { KeyPair, Signer } from './keys.js'
export {
  checkKeyUsable,
  createIdentityDocument,
  DEFAULT_TRANSITION_MS,
  publicKeyOf,
  revokeKey,
  rotateKey,
  validateIdentityDocument,
} from './identity.js'
export type { IdentityDocument, IdentityKey, KeyStatus } from './identity.js'

// Messages, signatures, verification
export { createMessage, createMessageId } from './create-message.js'
export type { CreateMessageOptions } from './create-message.js'
export { validateMessage } from './message.js'
export type { ProtocolError, ValidationResult } from './message.js'
export { requiredSignedHeaders, signMessage } from './sign.js'
export type { SignOptions } from './sign.js'
export { buildSigningInput } from './signing-input.js'
export { verifyMessage } from './verify.js'
export type { VerifiedSignature, VerifyOptions, VerifyResult } from './verify.js'

// Key resolution and introductions
export { chainResolvers } from './resolver.js'
export { resolveEd25519Key } from './resolve-key.js'
export type { ResolvedEd25519Key, ResolveEd25519KeyOptions } from './resolve-key.js'
export { createKeyResolver } from './create-resolver.js'
export type { CreateKeyResolverOptions } from './create-resolver.js'
export {
  didKeyResolver,
  IdentityDocumentCache,
  identityDocumentResolver,
} from './identity-resolver.js'
export type {
  IdentityDocumentResolverOptions,
  IdentityFetcher,
  IdentityFetchResult,
} from './identity-resolver.js'
export { KeyStore } from './key-store.js'
export type { StoredKey } from './key-store.js'
export {
  createIntroductionToken,
  hmacSigner,
  introducedIdentity,
  introductionFragment,
} from './introduction.js'

// Trust state
export { AuthLevelTracker, levelForKeySource } from './auth-level.js'
export type { AuthDecision, KeySource } from './auth-level.js'
export { ReplayGuard } from './replay.js'
export { createErrorMessage, ErrorReplyGate } from './error-message.js'
export type { ErrorMessageOptions } from './error-message.js'

// Storage
export { cloneJsonValue, memoryStorage } from './storage/memory.js'
export { namespacedStorage } from './storage/namespace.js'
