/**
 * @agentmsg/core — agent ids, did:key, identity documents, RFC 8785 canonical form,
 * Ed25519/HMAC signatures, authentication levels, replay protection. Isomorphic: no Node
 * built-ins; the crypto provider is picked per platform through package conditions.
 *
 * @packageDocumentation
 */

export { createWebCryptoProvider, webCryptoSupportsEd25519 } from './crypto/web.js'
export type { ErrorMessageOptions } from './error-message.js'
export { createErrorMessage, ErrorReplyGate } from './error-message.js'
// The narrow entries (what a browser bundle loads lazily) and the rest; one list of names each.
export * from './identity-entry.js'
export { introductionFragment } from './introduction.js'
export * from './message-entry.js'
export * from './receive-entry.js'
export type { ResolvedEd25519Key, ResolveEd25519KeyOptions } from './resolve-key.js'
export { resolveEd25519Key } from './resolve-key.js'
export { buildSigningInput } from './signing-input.js'
export { memoryStorage } from './storage/memory.js'
export { parseStrictJson } from './strict-json.js'
