/**
 * `@agentmsg/core/sealed-box` — sealed bodies (PROFILE §8) on libsodium's `crypto_box_seal`.
 *
 * @packageDocumentation
 */
export type { SealRecipient } from './body.js'
export { openSealedBody, sealBody } from './body.js'
export { cryptoBoxSeal, cryptoBoxSealOpen } from './primitives.js'
