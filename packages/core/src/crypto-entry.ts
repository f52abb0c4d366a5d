/**
 * `@agentmsg/core/crypto` — Ed25519 providers: the default one per platform, and pure-JS noble.
 *
 * @packageDocumentation
 */
export { nobleCryptoProvider } from './crypto/noble.js'
export { createWebCryptoProvider, webCryptoSupportsEd25519 } from './crypto/web.js'
