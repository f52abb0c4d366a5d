/**
 * `@agentmsg/core/identity` — identity documents of URL agents (PROFILE §4): building, strict
 * validation, key rotation and revocation, the retired-key bounds, the cached resolver that
 * fetches them, the resolver chain built on it, and the documents level-0 greetings carry.
 *
 * A narrow entry for bundle size (see `@agentmsg/core/message`): an agent that only meets
 * did:key agents never loads it. The root entry exports all of this too.
 *
 * @packageDocumentation
 */

export type { CreateKeyResolverOptions } from './create-resolver.js'
export { createKeyResolver } from './create-resolver.js'
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
export { IdentityDocumentCache, identityDocumentResolver } from './identity-resolver.js'
export { introducedIdentity } from './introduction.js'
