/**
 * `@agentmsg/core/sealed-box` — sealed bodies (PROFILE §8) from noble primitives: seal a body
 * for its recipients, open and check a sealed part; libsodium's `crypto_box_seal` under them. Loaded only when something is sealed or opened.
 *
 * @packageDocumentation
 */
export type { SealRecipient } from './body.js'
export { openSealedBody, sealBody } from './body.js'
export { cryptoBoxSeal, cryptoBoxSealOpen } from './primitives.js'
