/**
 * `@agentmsg/core/identity` — identity documents (PROFILE §4): create, rotate, revoke and
 * validate one; fetch and cache peers' (`IdentityDocumentCache`); and `createKeyResolver`, which
 * resolves keys through documents, did:key and pinned keys. Apart from `/receive` so that an
 * agent that meets only did:key agents never loads document handling.
 *
 * @packageDocumentation
 */
export { createIdentityDocument, revokeKey, rotateKey } from './identity/create.js'
export { validateIdentityDocument } from './identity/document.js'
export {
  createKeyResolver,
  IdentityDocumentCache,
  identityDocumentResolver,
} from './identity-resolver.js'
