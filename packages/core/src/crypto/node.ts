/**
 * Node provider on `node:crypto` (OpenSSL 3). The fastest choice on Node: Ed25519 runs in
 * native code, and the callback forms of `sign`/`verify` run in libuv's thread pool, so many
 * operations in flight use every core instead of blocking the event loop one at a time.
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
import type { CryptoProvider } from './provider.js'

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

// Every operation goes to libuv's thread pool (the callback forms), so operations in flight run
// in parallel on every core and the event loop only pays the hand-off. Running one inline when
// nothing else seemed pending was tried: it helps a caller doing one at a time, but a server
// sees "nothing pending" between most requests, ran every verification on the event loop and
// lost a third of its throughput (inbox bench 0.61× vs 0.9×).
function inPool<T>(start: (done: (err: Error | null, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    try {
      start((err, value) => {
        if (err) reject(err)
        else resolve(value as T)
      })
    } catch (err) {
      reject(err)
    }
  })
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

  ed25519Sign(seed, message) {
    try {
      const key = seedEntry(seed).privateKey
      // Copy out of the Buffer: callers get a plain Uint8Array that owns its memory.
      return inPool<Uint8Array>((done) =>
        nodeSign(null, message, key, (err, sig) =>
          done(err, err ? undefined : new Uint8Array(sig)),
        ),
      )
    } catch (err) {
      return Promise.reject(err)
    }
  },

  ed25519Verify(publicKey, message, signature) {
    if (publicKey.length !== 32 || signature.length !== 64) return Promise.resolve(false)
    const key = publicKeyObject(publicKey)
    if (!key) return Promise.resolve(false)
    try {
      return inPool<boolean>((done) =>
        nodeVerify(null, message, key, signature, (err, ok) => done(null, !err && ok)),
      ).catch(() => false)
    } catch {
      return Promise.resolve(false)
    }
  },

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
