/**
 * `@agentmsg/core/sealed-box` — libsodium-compatible sealed boxes and sealed message bodies
 * (PROFILE §8). A subpath of its own: X25519, XSalsa20-Poly1305 and BLAKE2b are only downloaded
 * by apps that seal or open.
 *
 * @packageDocumentation
 */

export type { SealableMessage, SealedBody, SealedBoxOpener, SealRecipient } from './body.js'
export { isSealedBody, openSealedBody, sealBody } from './body.js'
export {
  cryptoBoxSeal,
  cryptoBoxSealOpen,
  ed25519PublicKeyToX25519,
  ed25519SeedToX25519SecretKey,
  SEALED_BOX_OVERHEAD,
} from './primitives.js'
