/**
 * `@agentmsg/core/sealed-box` — sealed bodies (PROFILE §8) on libsodium's `crypto_box_seal`.
 *
 * @packageDocumentation
 */

export {
  ed25519PublicKeyToX25519,
  ed25519SeedToX25519SecretKey,
  resolveDidKeyDocument,
} from '../x25519.js'
export type { SealRecipient } from './body.js'
export { openSealedBody, sealBody } from './body.js'
export { cryptoBoxSeal, cryptoBoxSealOpen } from './primitives.js'
