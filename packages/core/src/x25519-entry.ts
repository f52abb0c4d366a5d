/**
 * `@agentmsg/core/x25519` — Ed25519 → X25519 conversion and full did:key DID documents.
 *
 * @packageDocumentation
 */

export type {
  DidDocument,
  DidVerificationMethod,
  OkpPublicJwk,
  ResolveDidKeyOptions,
} from './x25519.js'
export {
  ed25519PublicKeyToX25519,
  ed25519SeedToX25519SecretKey,
  resolveDidKeyDocument,
} from './x25519.js'
