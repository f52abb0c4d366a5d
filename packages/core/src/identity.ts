/**
 * Identity documents (SPEC §2.2–2.4, §3.1, PROFILE §4): building, strict validation, key
 * rotation and revocation, and the retired-key bounds a verifier applies.
 *
 * Everything here is a pure function of its inputs (the clock is a parameter), so verifiers on
 * different machines reach the same verdict for the same document and signature.
 */

export { type CreateIdentityDocumentOptions, createIdentityDocument } from './identity/create.js'
export type {
  IdentityDocument,
  IdentityEndpoints,
  IdentityKey,
  KeyStatus,
  RelayPreference,
} from './identity/document.js'
export { type KeyChangeOptions, revokeKey, rotateKey } from './identity/key-changes.js'
export {
  type CheckKeyUsableOptions,
  checkKeyUsable,
  DEFAULT_TRANSITION_MS,
  type KeyUsability,
  publicKeyOf,
  RETIRED_KEY_CREATED_SLACK_MS,
} from './identity/key-usability.js'
export {
  type ValidateIdentityDocumentOptions,
  validateIdentityDocument,
} from './identity/validate.js'
