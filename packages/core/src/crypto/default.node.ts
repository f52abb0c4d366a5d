/** `#crypto-default` on Node (package `imports` condition `node`): `node:crypto`, the fastest. */
import { nodeCryptoProvider } from './node.js'
import type { CryptoProvider } from './provider.js'

export const defaultCryptoProvider: CryptoProvider = nodeCryptoProvider

/** The platform's default provider, the same shape in every `#crypto-default` variant. */
export const getDefaultCryptoProvider = (): CryptoProvider => defaultCryptoProvider
