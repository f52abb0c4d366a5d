/**
 * `@agentmsg/core/noble` — the pure-JavaScript crypto provider, for runtimes without Ed25519 in
 * WebCrypto or `node:crypto`. Its own entry so apps that never need it do not download it.
 *
 * @packageDocumentation
 */
export { nobleCryptoProvider } from './crypto/noble.js'
