/**
 * Pure-JS provider on `@noble/ed25519` and `@noble/hashes`: works anywhere (old browsers,
 * insecure contexts without `crypto.subtle`, React Native, workers), at the cost of speed.
 */
import * as ed from '@noble/ed25519'
import { hmac } from '@noble/hashes/hmac.js'
import { sha256, sha512 } from '@noble/hashes/sha2.js'
import type { CryptoProvider } from './provider.js'

// noble's synchronous sign/verify need a synchronous SHA-512, and its only hook is a shared slot,
// `ed.hashes.sha512` (a slot noble-ed25519 documents). It is filled on first use rather than as a
// module side effect: a top-level assignment cannot be tree-shaken, and it pulled all of noble
// into every browser bundle that merely imported core. Installing the same standard SHA-512
// twice (another copy of this module) is harmless.
function ready(): void {
  if (ed.hashes.sha512 === undefined) ed.hashes.sha512 = sha512
}

// RFC 8032 strict decoding (canonical y < p, no x=0 with sign bit), small-order keys refused.
// The default (`zip215: true`) accepts encodings that PROFILE §3 and Wycheproof refuse.
const STRICT = { zip215: false } as const

/** Ed25519, HMAC-SHA256 and SHA-256 in pure JavaScript (`name: 'noble'`). */
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
      // noble throws on malformed input types; the contract is "false, never throw".
      return false
    }
  },

  async hmacSha256(key, data) {
    return hmac(sha256, key, data)
  },

  async sha256(data) {
    return sha256(data)
  },

  async sha512(data) {
    return sha512(data)
  },
}
