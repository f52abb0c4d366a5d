/** `#crypto-default` elsewhere (Deno, Bun, React Native, edge workers): pure JavaScript. */
import { nobleCryptoProvider } from './noble.js'
import type { CryptoProvider } from './provider.js'

export const defaultCryptoProvider: CryptoProvider = nobleCryptoProvider

/** The platform's default provider, the same shape in every `#crypto-default` variant. */
export const getDefaultCryptoProvider = (): CryptoProvider => defaultCryptoProvider
