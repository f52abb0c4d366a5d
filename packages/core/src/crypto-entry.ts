/**
 * `@agentmsg/core/crypto` — Ed25519 providers: the default one per platform, and pure-JS noble.
 *
 * @packageDocumentation
 */
export { getDefaultCryptoProvider } from '#crypto-default'
export { nobleCryptoProvider } from './crypto/noble.js'
export type { CryptoProvider } from './crypto/provider.js'
export { createWebCryptoProvider, webCryptoSupportsEd25519 } from './crypto/web.js'
