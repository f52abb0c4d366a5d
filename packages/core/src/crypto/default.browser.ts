// `#crypto-default` in browsers (no `node:` imports): WebCrypto when it passes
// `webCryptoSupportsEd25519` (Ed25519 is recent there), else noble.
import type { CryptoProvider } from './provider.js'
import { createWebCryptoProvider, webCryptoSupportsEd25519 } from './web.js'

let chosen: CryptoProvider | undefined
let choosing: Promise<CryptoProvider> | undefined

// Decided once: the probe costs an import and two verifications. noble is loaded only when
// needed, which keeps it out of the first chunk for the many browsers that have Ed25519.
function choose(): Promise<CryptoProvider> {
  choosing ??= webCryptoSupportsEd25519().then(async (ok) => {
    chosen = ok ? createWebCryptoProvider() : (await import('./noble.js')).nobleCryptoProvider
    return chosen
  })
  return choosing
}

const provider = (): CryptoProvider | Promise<CryptoProvider> => chosen ?? choose()

/** The browser default: picks WebCrypto or noble on the first call; `name` is `auto` until then. */
export const defaultCryptoProvider: CryptoProvider = {
  get name() {
    return chosen?.name ?? 'auto'
  },
  ed25519PublicKey: async (seed) => (await provider()).ed25519PublicKey(seed),
  ed25519Sign: async (seed, message) => (await provider()).ed25519Sign(seed, message),
  ed25519Verify: async (key, message, sig) => (await provider()).ed25519Verify(key, message, sig),
  hmacSha256: async (key, data) => (await provider()).hmacSha256(key, data),
  sha256: async (data) => (await provider()).sha256(data),
  sha512: async (data) => (await provider()).sha512(data),
}

/** The platform's default provider, the same shape in every `#crypto-default` variant. */
export const getDefaultCryptoProvider = (): CryptoProvider => defaultCryptoProvider
