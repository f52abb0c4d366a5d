/**
 * `#crypto-default` in browsers (package `imports` condition `browser`). Must stay free of
 * `node:` imports. Ed25519 arrived in WebCrypto only recently (Chrome 137, Firefox 129,
 * Safari 17), so the choice is made at run time: WebCrypto when it passes
 * {@link webCryptoSupportsEd25519}, else the pure-JS noble provider.
 */
import type { CryptoProvider } from './provider.js'
import { createWebCryptoProvider, webCryptoSupportsEd25519 } from './web.js'

let chosen: CryptoProvider | undefined
let choosing: Promise<CryptoProvider> | undefined

/**
 * Decide once, on first use, and remember: the probe costs an import and two verifications, so
 * it must not run per call. noble is loaded only when needed, which keeps it out of the initial
 * bundle chunk for the many browsers that have Ed25519.
 */
function choose(): Promise<CryptoProvider> {
  choosing ??= webCryptoSupportsEd25519().then(async (ok) => {
    chosen = ok ? createWebCryptoProvider() : (await import('./noble.js')).nobleCryptoProvider
    return chosen
  })
  return choosing
}

const provider = (): CryptoProvider | Promise<CryptoProvider> => chosen ?? choose()

/**
 * The provider the SDK uses in browsers when none is passed in. Its methods pick WebCrypto or
 * noble on the first call; `name` reads `auto` until then.
 */
export const defaultCryptoProvider: CryptoProvider = {
  get name() {
    return chosen?.name ?? 'auto'
  },
  async ed25519PublicKey(seed) {
    return (await provider()).ed25519PublicKey(seed)
  },
  async ed25519Sign(seed, message) {
    return (await provider()).ed25519Sign(seed, message)
  },
  async ed25519Verify(publicKey, message, signature) {
    return (await provider()).ed25519Verify(publicKey, message, signature)
  },
  async hmacSha256(key, data) {
    return (await provider()).hmacSha256(key, data)
  },
  async sha256(data) {
    return (await provider()).sha256(data)
  },
  async sha512(data) {
    return (await provider()).sha512(data)
  },
}

/** The platform's default provider; a function so every `#crypto-default` variant has one shape. */
export function getDefaultCryptoProvider(): CryptoProvider {
  return defaultCryptoProvider
}
