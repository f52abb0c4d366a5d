/**
 * Node provider on `node:crypto` (OpenSSL 3). The fastest choice on Node: Ed25519 runs in
 * native code, inline (the sync forms) for a caller doing one operation at a time, or in libuv's
 * thread pool (the callback forms) so many operations in flight use every core instead of
 * blocking the event loop one at a time (see CryptoMode).
 */
import {
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  sign as nodeSign,
  verify as nodeVerify,
} from 'node:crypto'
import { constantTimeEqual } from '../bytes.js'
import { Lru } from '../lru.js'
import { autoRunsInline, ranInline, ranPooled } from './node-mode.js'
import type { CryptoMode, CryptoProvider } from './provider.js'

// DER headers (RFC 8410) that wrap a raw 32-byte Ed25519 key for `createPublicKey` /
// `createPrivateKey`, which have no raw import in Node 20.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/** Bounded number of public KeyObjects kept, so a flood of new keys cannot grow memory. */
const VERIFY_CACHE_SIZE = 1024
/** Seeds are few (one per local identity); the bound only guards against misuse. */
const SEED_CACHE_SIZE = 64

/** A Buffer view (no copy) of `u`, for Node APIs and latin1 cache keys. */
const view = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength)

interface SeedEntry {
  /** A private copy, so a caller that later overwrites its array cannot poison the cache. */
  seed: Uint8Array
  privateKey: KeyObject
  publicKey?: Uint8Array
}

const seedsByObject = new WeakMap<Uint8Array, SeedEntry>()
const seedsByValue = new Lru<SeedEntry>(SEED_CACHE_SIZE)
// `null` marks a key OpenSSL refused to import: it can never verify, and caching that keeps a
// repeated bad key from costing an import each time.
const publicKeys = new Lru<KeyObject | null>(VERIFY_CACHE_SIZE)

function seedEntry(seed: Uint8Array): SeedEntry {
  if (seed.length !== 32) throw new RangeError('Ed25519 seed must be 32 bytes')
  const byObject = seedsByObject.get(seed)
  if (byObject && constantTimeEqual(byObject.seed, seed)) return byObject
  const valueKey = view(seed).toString('latin1')
  let entry = seedsByValue.get(valueKey)
  if (!entry) {
    const der = Buffer.concat([PKCS8_PREFIX, seed])
    const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
    der.fill(0) // the DER copy holds the secret; OpenSSL now has its own
    entry = { seed: seed.slice(), privateKey }
    seedsByValue.set(valueKey, entry)
  }
  seedsByObject.set(seed, entry)
  return entry
}

function publicKeyObject(publicKey: Uint8Array): KeyObject | null {
  const k = view(publicKey).toString('latin1')
  let key = publicKeys.get(k)
  if (key === undefined) {
    try {
      const der = Buffer.concat([SPKI_PREFIX, publicKey])
      key = createPublicKey({ key: der, format: 'der', type: 'spki' })
    } catch {
      key = null
    }
    publicKeys.set(k, key)
  }
  return key
}

// Where each operation runs (see CryptoMode and crypto/node-mode.ts): `pool` — the callback
// forms, in libuv's thread pool, so operations in flight run in parallel on every core and the
// event loop only pays the hand-off; `inline` — the sync forms, no hand-off; `auto` — inline
// unless the event loop is busy with other work. Unset stays `pool`, the safe choice for the
// server paths that do not say (relay agent auth, the WebSocket challenge).
function runsInline(mode: CryptoMode | undefined, now: number): boolean {
  return mode === 'inline' || (mode === 'auto' && autoRunsInline(now))
}

/**
 * Ed25519, HMAC-SHA256 and SHA-256 on `node:crypto` (`name: 'node'`). KeyObjects are cached:
 * per seed, and per public key in an LRU of 1024, since building one costs about as much as a
 * verification.
 */
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
        // Copy out of the Buffer: callers get a plain Uint8Array that owns its memory.
        return Promise.resolve(new Uint8Array(sig))
      }
      // One promise per operation; the executor turns a synchronous throw into a rejection.
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
        // same contract as the pooled form: false, never throw
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

  // A signing input of a few KB comes from Buffer's shared slab in ~0.4 µs, where TextEncoder
  // allocates an ArrayBuffer of its own (~1.6 µs, and more GC). The bytes only ever reach
  // node:crypto, which copies what it keeps (the callback forms copy their input).
  utf8: (text) => Buffer.from(text, 'utf8'),

  async hmacSha256(key, data) {
    return new Uint8Array(createHmac('sha256', key).update(data).digest())
  },

  async sha256(data) {
    return new Uint8Array(createHash('sha256').update(data).digest())
  },

  async sha512(data) {
    return new Uint8Array(createHash('sha512').update(data).digest())
  },
}
