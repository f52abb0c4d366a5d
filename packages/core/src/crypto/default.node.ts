/**
 * `#crypto-default` on Node (package `imports` condition `node`): `node:crypto`, the fastest
 * provider there.
 */
import { nodeCryptoProvider } from './node.js'
import type { CryptoProvider } from './provider.js'

/** The provider the SDK uses on Node when none is passed in: {@link nodeCryptoProvider}. */
export const defaultCryptoProvider: CryptoProvider = nodeCryptoProvider

/** The platform's default provider; a function so every `#crypto-default` variant has one shape. */
export function getDefaultCryptoProvider(): CryptoProvider {
  return defaultCryptoProvider
}
