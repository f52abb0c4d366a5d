/** Pure JS on `@noble/ed25519` and `@noble/hashes`: works anywhere, at the cost of speed. */
import * as ed from '@noble/ed25519'
import { hmac } from '@noble/hashes/hmac.js'
import { sha256, sha512 } from '@noble/hashes/sha2.js'
import type { CryptoProvider } from './provider.js'

// noble's sync sign/verify need a sync SHA-512 in its shared slot `ed.hashes.sha512`. Filled on
// first use: a top-level assignment cannot be tree-shaken and pulled noble into every bundle.
function ready(): void {
  if (ed.hashes.sha512 === undefined) ed.hashes.sha512 = sha512
}

// RFC 8032 strict decoding, small-order keys refused: ZIP-215 accepts what PROFILE §3 refuses.
const STRICT = { zip215: false } as const

/** Ed25519, HMAC-SHA256 and SHA-2 in pure JavaScript (`name: 'noble'`). */
export const nobleCryptoProvider: CryptoProvider = {
  name: 'noble',

  async ed25519PublicKey(seed) {
    ready()
    return ed.getPublicKey(seed)
  },
  async ed25519Sign(seed, message) {
    ready()
    return ed.sign(message, seed)
  },
  async ed25519Verify(publicKey, message, signature) {
    ready()
    if (publicKey.length !== 32 || signature.length !== 64) return false
    try {
      return ed.verify(signature, message, publicKey, STRICT)
    } catch {
      // noble throws on malformed input types; the contract is false, never a throw.
      return false
    }
  },

  hmacSha256: async (key, data) => hmac(sha256, key, data),
  sha256: async (data) => sha256(data),
  sha512: async (data) => sha512(data),
}
