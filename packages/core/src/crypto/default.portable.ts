/**
 * `#crypto-default` for runtimes that are neither Node nor a browser (package `imports`
 * condition `default`: Deno, Bun without the node condition, React Native, edge workers): pure
 * JavaScript, which needs neither `node:crypto` nor Ed25519 in WebCrypto.
 */
import { nobleCryptoProvider } from './noble.js'
import type { CryptoProvider } from './provider.js'

/** The provider the SDK uses when none is passed in: {@link nobleCryptoProvider}. */
export const defaultCryptoProvider: CryptoProvider = nobleCryptoProvider

/** The platform's default provider; a function so every `#crypto-default` variant has one shape. */
export function getDefaultCryptoProvider(): CryptoProvider {
  return defaultCryptoProvider
}
