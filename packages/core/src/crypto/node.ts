// Ed25519 on `node:crypto` in native code: inline (the sync forms), or in libuv's thread pool (the
// callback forms) so operations in flight use every core (see CryptoMode).
import {
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  sign as nodeSign,
  verify as nodeVerify,
} from 'node:crypto'
import { bytesCache, seedCache } from '../lru.js'
import { autoRunsInline, ranInline, ranPooled } from './node-mode.js'
import type { CryptoMode, CryptoProvider } from './provider.js'

// DER headers (RFC 8410) around a raw Ed25519 key: Node 20 has no raw key import.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

const seedEntry = seedCache((seed): { privateKey: KeyObject; publicKey?: Uint8Array } => {
  const der = Buffer.concat([PKCS8_PREFIX, seed])
  const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
  der.fill(0) // the DER copy holds the secret; OpenSSL now has its own
  return { privateKey }
})

// Building a KeyObject costs about a verification. `null`: OpenSSL refused the key, which can
// never verify; caching that keeps a repeated bad key from costing an import each time.
const publicKeyObject = bytesCache(
  1024,
  (publicKey): KeyObject | null => {
    try {
      const der = Buffer.concat([SPKI_PREFIX, publicKey])
      return createPublicKey({ key: der, format: 'der', type: 'spki' })
    } catch {
      return null
    }
  },
  (u) => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('latin1'),
)

// Unset stays `pool`: the safe choice for server paths that do not say (relay agent auth).
function runsInline(mode: CryptoMode | undefined, now: number): boolean {
  return mode === 'inline' || (mode === 'auto' && autoRunsInline(now))
}

/** Ed25519, HMAC-SHA256 and SHA-2 on `node:crypto` (`name: 'node'`). */
export const nodeCryptoProvider: CryptoProvider = {
  name: 'node',

  async ed25519PublicKey(seed) {
    const entry = seedEntry(seed)
    if (!entry.publicKey) {
      const spki = createPublicKey(entry.privateKey).export({ format: 'der', type: 'spki' })
      entry.publicKey = new Uint8Array(spki.subarray(SPKI_PREFIX.length))
    }
    return entry.publicKey.slice()
  },

  ed25519Sign(seed, message, mode) {
    try {
      const key = seedEntry(seed).privateKey
      const start = mode === undefined || mode === 'pool' ? 0 : performance.now()
      if (runsInline(mode, start)) {
        const sig = nodeSign(null, message, key)
        ranInline(start, performance.now())
        return Promise.resolve(new Uint8Array(sig))
      }
      return new Promise<Uint8Array>((resolve, reject) => {
        nodeSign(null, message, key, (err, sig) => {
          if (mode === 'auto') ranPooled()
          if (err) reject(err)
          else resolve(new Uint8Array(sig))
        })
      })
    } catch (err) {
      return Promise.reject(err)
    }
  },

  ed25519Verify(publicKey, message, signature, mode) {
    if (publicKey.length !== 32 || signature.length !== 64) return Promise.resolve(false)
    const key = publicKeyObject(publicKey)
    if (!key) return Promise.resolve(false)
    const start = mode === undefined || mode === 'pool' ? 0 : performance.now()
    if (runsInline(mode, start)) {
      let ok = false
      try {
        ok = nodeVerify(null, message, key, signature)
      } catch {
        // false, never throw, as the pooled form
      }
      ranInline(start, performance.now())
      return Promise.resolve(ok)
    }
    return new Promise<boolean>((resolve) => {
      try {
        nodeVerify(null, message, key, signature, (err, ok) => {
          if (mode === 'auto') ranPooled()
          resolve(!err && ok)
        })
      } catch {
        resolve(false)
      }
    })
  },

  // Buffer's shared slab: ~0.4 µs for a few KB where TextEncoder takes ~1.6 µs; the bytes only
  // reach node:crypto, which copies what it keeps.
  utf8: (text) => Buffer.from(text, 'utf8'),

  hmacSha256: async (key, data) => new Uint8Array(createHmac('sha256', key).update(data).digest()),
  sha256: async (data) => new Uint8Array(createHash('sha256').update(data).digest()),
  sha512: async (data) => new Uint8Array(createHash('sha512').update(data).digest()),
}
