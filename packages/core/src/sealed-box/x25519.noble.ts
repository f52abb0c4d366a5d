// X25519 in pure JS (@noble/curves), imported by x25519.web.ts only where WebCrypto lacks it.
import { x25519 } from '@noble/curves/ed25519.js'
import type { X25519Backend } from './x25519.web.js'

/** X25519 on @noble/curves (`name: 'noble'`); noble throws for an all-zero shared secret. */
export const nobleX25519: X25519Backend = {
  name: 'noble',
  async ephemeral(peer) {
    const { secretKey, publicKey } = x25519.keygen()
    return { publicKey, shared: x25519.getSharedSecret(secretKey, peer) }
  },
  shared: async (secretKey, peer) => x25519.getSharedSecret(secretKey, peer),
}
