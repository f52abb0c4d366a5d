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

/** The platform's default provider, the same shape in every `#crypto-default` variant. */
export const getDefaultCryptoProvider = (): CryptoProvider => defaultCryptoProvider
