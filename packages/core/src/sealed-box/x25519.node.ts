// `#x25519` on Node: X25519 in OpenSSL (node:crypto), the fastest there (bench/sealed-box.mjs).
import { createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync } from 'node:crypto'
import { seedCache } from '../lru.js'
import type { X25519Backend } from './x25519.web.js'

// Node 20 has no raw secret key import: PKCS#8 (RFC 8410, id-X25519), once per key (bounded).
const PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex')
const secretKey = seedCache((sk) => {
  const der = Buffer.concat([PKCS8_PREFIX, sk])
  const key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
  der.fill(0) // the DER copy holds the secret; OpenSSL now has its own
  return { key }
})

// Public keys go in and out as JWK (RFC 8037), raw bytes to OpenSSL: DER goes through its
// decoders, ~10× slower. OpenSSL refuses an all-zero result (a small-order peer) with an error.
const derive = (privateKey: ReturnType<typeof createPrivateKey>, peer: Uint8Array) => {
  const jwk = { kty: 'OKP', crv: 'X25519', x: Buffer.from(peer).toString('base64url') }
  return new Uint8Array(
    diffieHellman({ privateKey, publicKey: createPublicKey({ key: jwk, format: 'jwk' }) }),
  )
}

/** X25519 on node:crypto (`name: 'node'`). */
export const nodeX25519: X25519Backend = {
  name: 'node',
  async ephemeral(peer) {
    const { privateKey, publicKey } = generateKeyPairSync('x25519')
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url')
    return { publicKey: new Uint8Array(raw), shared: derive(privateKey, peer) }
  },
  shared: async (sk, peer) => derive(secretKey(sk).key, peer),
}

/** The platform's X25519, the same shape in every `#x25519` variant. */
export const x25519Backend = async (): Promise<X25519Backend> => nodeX25519
