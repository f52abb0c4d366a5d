// `#x25519` on Node: X25519 in OpenSSL through node:crypto, the fastest there (bench/sealed-box.mjs).
import {
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto'
import { seedCache } from '../lru.js'
import type { X25519Backend } from './x25519-backend.js'

// A raw public key goes in and out as a JWK (RFC 8037): OpenSSL takes and gives the raw bytes
// then, where DER goes through its decoders (~10× slower, bench/sealed-box.mjs profile).
const publicKeyObject = (raw: Uint8Array): KeyObject =>
  createPublicKey({
    key: { kty: 'OKP', crv: 'X25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  })

const rawPublicKey = (key: KeyObject): Uint8Array =>
  new Uint8Array(Buffer.from(key.export({ format: 'jwk' }).x ?? '', 'base64url'))

// Node 20 has no raw secret key import: PKCS#8 (RFC 8410, id-X25519), once per key.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex')

// One KeyObject per secret key (an agent's own, derived from its Ed25519 seed): bounded.
const secretEntry = seedCache((sk): { key: KeyObject; publicKey?: Uint8Array } => {
  const der = Buffer.concat([PKCS8_PREFIX, sk])
  const key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
  der.fill(0) // the DER copy holds the secret; OpenSSL now has its own
  return { key }
})

// OpenSSL refuses an all-zero result (a small-order peer) with an error; primitives.ts maps it.
const derive = (privateKey: KeyObject, peer: Uint8Array): Uint8Array =>
  new Uint8Array(diffieHellman({ privateKey, publicKey: publicKeyObject(peer) }))

/** X25519 on node:crypto (`name: 'node'`). */
export const nodeX25519: X25519Backend = {
  name: 'node',
  async ephemeral(peer) {
    const { privateKey, publicKey } = generateKeyPairSync('x25519')
    return { publicKey: rawPublicKey(publicKey), shared: derive(privateKey, peer) }
  },
  async shared(secretKey, peer) {
    return derive(secretEntry(secretKey).key, peer)
  },
  async publicKey(secretKey) {
    const entry = secretEntry(secretKey)
    entry.publicKey ??= rawPublicKey(createPublicKey(entry.key))
    return entry.publicKey.slice()
  },
}

/** The platform's X25519, the same shape in every `#x25519` variant. */
export const x25519Backend = async (): Promise<X25519Backend> => nodeX25519
