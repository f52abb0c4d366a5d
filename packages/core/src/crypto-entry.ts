/**
 * `@agentmsg/core/crypto` — Ed25519 providers. The default one follows from the package
 * conditions (`node:crypto` on Node, else WebCrypto when it passes the RFC 8032 probe, else
 * noble); `nobleCryptoProvider` is the pure-JS one, for runtimes without either.
 *
 * @packageDocumentation
 */
export { getDefaultCryptoProvider } from '#crypto-default'
export { nobleCryptoProvider } from './crypto/noble.js'
export type { CryptoProvider } from './crypto/provider.js'
export { createWebCryptoProvider, webCryptoSupportsEd25519 } from './crypto/web.js'
