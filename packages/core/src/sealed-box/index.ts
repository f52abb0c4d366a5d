/**
 * `@agentmsg/core/sealed-box` — sealed bodies (PROFILE §8) from noble primitives: seal a body
 * for its recipients, open and check a sealed part; libsodium's `crypto_box_seal` and the
 * Ed25519 → X25519 conversions under them. Loaded only when something is sealed or opened.
 *
 * @packageDocumentation
 */
export type { SealedBoxOpener, SealRecipient } from './body.js'
export { isSealedBody, openSealedBody, sealBody } from './body.js'
export {
  cryptoBoxSeal,
  cryptoBoxSealOpen,
  ed25519PublicKeyToX25519,
  ed25519SeedToX25519SecretKey,
} from './primitives.js'
