// X25519 in pure JavaScript (@noble/curves): for platforms with neither node:crypto nor a
// WebCrypto X25519; imported dynamically (x25519.web.ts), so others never download it.
import { x25519 } from '@noble/curves/ed25519.js'
import type { X25519Backend } from './x25519-backend.js'

/** X25519 on @noble/curves (`name: 'noble'`); noble throws for an all-zero shared secret. */
export const nobleX25519: X25519Backend = {
  name: 'noble',
  async ephemeral(peer) {
    const { secretKey, publicKey } = x25519.keygen()
    try {
      return { publicKey, shared: x25519.getSharedSecret(secretKey, peer) }
    } finally {
      secretKey.fill(0)
    }
  },
  shared: async (secretKey, peer) => x25519.getSharedSecret(secretKey, peer),
  publicKey: async (secretKey) => x25519.getPublicKey(secretKey),
}
