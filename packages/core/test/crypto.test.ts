import { describe, expect, it } from 'vitest'
import { constantTimeEqual } from '../src/bytes.js'
import * as defaultBrowser from '../src/crypto/default.browser.js'
import * as defaultNode from '../src/crypto/default.node.js'
import * as defaultPortable from '../src/crypto/default.portable.js'
import { nobleCryptoProvider } from '../src/crypto/noble.js'
import { nodeCryptoProvider } from '../src/crypto/node.js'
import type { CryptoProvider } from '../src/crypto/provider.js'
import { createWebCryptoProvider, webCryptoSupportsEd25519 } from '../src/crypto/web.js'
import { checkEd25519Vectors } from './shared/ed25519-vectors.js'
import { checkHmacVectors } from './shared/hmac-vectors.js'
import { readVectorJson } from './vectors.node.js'

const ed25519Data = {
  rfc8032: readVectorJson('ed25519-rfc8032-7.1.json'),
  wycheproof: readVectorJson('wycheproof-ed25519_test.json'),
}
const hmacData = {
  rfc4231: readVectorJson('hmac-sha256-rfc4231.json'),
  wycheproof: readVectorJson('wycheproof-hmac_sha256_test.json'),
}

// The published case counts (vectors README §1, §4): a check that silently skipped cases
// would otherwise pass.
const PUBLISHED_TOTALS: Record<string, number> = {
  'ed25519-rfc8032-7.1.json': 5,
  'wycheproof-ed25519_test.json': 151,
  'hmac-sha256-rfc4231.json': 7,
  'wycheproof-hmac_sha256_test.json': 174,
}

const providers: [string, () => CryptoProvider][] = [
  ['node', () => nodeCryptoProvider],
  ['webcrypto', () => createWebCryptoProvider()],
  ['noble', () => nobleCryptoProvider],
  ['default.node', () => defaultNode.getDefaultCryptoProvider()],
  ['default.portable', () => defaultPortable.defaultCryptoProvider],
  ['default.browser', () => defaultBrowser.defaultCryptoProvider],
]

const hex = (s: string) => Uint8Array.from(Buffer.from(s, 'hex'))

describe.each(providers)('%s provider', (_, make) => {
  const provider = make()

  it('agrees with every RFC 8032 and Wycheproof Ed25519 vector', async () => {
    const results = await checkEd25519Vectors(provider, ed25519Data)
    expect(results.map((r) => r.file)).toEqual([
      'ed25519-rfc8032-7.1.json',
      'wycheproof-ed25519_test.json',
    ])
    for (const r of results) {
      expect(r.failures, r.file).toEqual([])
      expect(r.total, r.file).toBe(PUBLISHED_TOTALS[r.file])
    }
  })

  it('agrees with every RFC 4231 and Wycheproof HMAC-SHA256 vector', async () => {
    const results = await checkHmacVectors(provider, hmacData, { constantTimeEqual })
    expect(results.map((r) => r.file)).toEqual([
      'hmac-sha256-rfc4231.json',
      'wycheproof-hmac_sha256_test.json',
    ])
    for (const r of results) {
      expect(r.failures, r.file).toEqual([])
      expect(r.total, r.file).toBe(PUBLISHED_TOTALS[r.file])
    }
  })

  it('computes SHA-256 (FIPS 180-2 "abc" and empty)', async () => {
    const abc = await provider.sha256(new TextEncoder().encode('abc'))
    expect(Buffer.from(abc).toString('hex')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    )
    expect(Buffer.from(await provider.sha256(new Uint8Array())).toString('hex')).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    )
  })

  it('resolves false, never throws, for wrong-length or non-point keys and signatures', async () => {
    const seed = new Uint8Array(32).fill(7)
    const msg = new Uint8Array([1, 2, 3])
    const pk = await provider.ed25519PublicKey(seed)
    const sig = await provider.ed25519Sign(seed, msg)
    await expect(provider.ed25519Verify(pk, msg, sig)).resolves.toBe(true)
    const cases: [Uint8Array, Uint8Array][] = [
      [pk.subarray(0, 31), sig],
      [new Uint8Array([...pk, 0]), sig],
      [new Uint8Array(), sig],
      [pk, sig.subarray(0, 63)],
      [pk, new Uint8Array([...sig, 0])],
      [pk, new Uint8Array()],
      // y = 2 is not on the curve (libsodium's invalid key 02 00…00).
      [hex('02'.padEnd(64, '0')), sig],
      // All-ones: y ≥ p, a non-canonical encoding.
      [new Uint8Array(32).fill(0xff), sig],
    ]
    for (const [k, s] of cases) await expect(provider.ed25519Verify(k, msg, s)).resolves.toBe(false)
  })

  it('keeps 200 verifications in flight and answers each correctly', async () => {
    const seeds = Array.from({ length: 8 }, (_, i) => new Uint8Array(32).fill(i + 1))
    const jobs = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const seed = seeds[i % seeds.length]!
        const msg = new TextEncoder().encode(`message ${i}`)
        const sig = await provider.ed25519Sign(seed, msg)
        if (i % 3 === 0) sig[i % 64]! ^= 1 << (i % 8)
        return { pk: await provider.ed25519PublicKey(seed), msg, sig, expected: i % 3 !== 0 }
      }),
    )
    const got = await Promise.all(jobs.map((j) => provider.ed25519Verify(j.pk, j.msg, j.sig)))
    expect(got).toEqual(jobs.map((j) => j.expected))
  })

  it('signs with the current contents of a reused seed array, not a stale cached key', async () => {
    const seed = new Uint8Array(32).fill(1)
    const msg = new Uint8Array([42])
    const first = await provider.ed25519Sign(seed, msg)
    seed.fill(2)
    const second = await provider.ed25519Sign(seed, msg)
    const pk2 = await provider.ed25519PublicKey(seed)
    expect(Buffer.from(second).equals(Buffer.from(first))).toBe(false)
    expect(second).toEqual(await nobleCryptoProvider.ed25519Sign(new Uint8Array(32).fill(2), msg))
    expect(pk2).toEqual(await nobleCryptoProvider.ed25519PublicKey(new Uint8Array(32).fill(2)))
  })

  it('rejects a seed that is not 32 bytes', async () => {
    await expect(provider.ed25519Sign(new Uint8Array(31), new Uint8Array())).rejects.toThrow()
    await expect(provider.ed25519PublicKey(new Uint8Array(33))).rejects.toThrow()
  })
})

describe('key caches', () => {
  // More distinct keys than the 1024-entry LRU holds: evicted keys must still verify.
  it.each([
    ['node', nodeCryptoProvider],
    ['webcrypto', createWebCryptoProvider()],
  ] as const)('%s verifies correctly past the cache bound', async (_, provider) => {
    const msg = new Uint8Array([9])
    const keys = await Promise.all(
      Array.from({ length: 1100 }, async (_, i) => {
        const seed = new Uint8Array(32)
        new DataView(seed.buffer).setUint32(0, i + 1)
        return {
          pk: await provider.ed25519PublicKey(seed),
          sig: await provider.ed25519Sign(seed, msg),
        }
      }),
    )
    for (const round of [0, 1]) {
      const ok = await Promise.all(keys.map((k) => provider.ed25519Verify(k.pk, msg, k.sig)))
      expect(ok.every(Boolean), `round ${round}`).toBe(true)
      // A signature under the neighbouring key must fail, cached or not.
      const crossed = await Promise.all(
        keys.slice(0, 50).map((k, i) => provider.ed25519Verify(k.pk, msg, keys[i + 1]!.sig)),
      )
      expect(crossed.some(Boolean)).toBe(false)
    }
  })
})

describe('webCryptoSupportsEd25519', () => {
  it('is true for Node 20 WebCrypto and caches the answer', async () => {
    const first = webCryptoSupportsEd25519()
    expect(await first).toBe(true)
    expect(webCryptoSupportsEd25519()).toBe(first)
  })

  it('is false without subtle, or when Ed25519 import fails', async () => {
    expect(await webCryptoSupportsEd25519(null as unknown as SubtleCrypto)).toBe(false)
    const broken = {
      importKey: () => Promise.reject(new DOMException('Algorithm: Unrecognized name')),
    } as unknown as SubtleCrypto
    expect(await webCryptoSupportsEd25519(broken)).toBe(false)
  })

  it('is false for an Ed25519 that accepts S + L (malleable signatures)', async () => {
    const real = globalThis.crypto.subtle
    const lax = {
      importKey: real.importKey.bind(real),
      verify: async () => true,
    } as unknown as SubtleCrypto
    expect(await webCryptoSupportsEd25519(lax)).toBe(false)
  })

  it('createWebCryptoProvider refuses to start without subtle', () => {
    expect(() => createWebCryptoProvider(null as unknown as SubtleCrypto)).toThrow(/not available/)
  })
})

describe('default providers', () => {
  it('default.node and default.portable are the node and noble providers', () => {
    expect(defaultNode.defaultCryptoProvider).toBe(nodeCryptoProvider)
    expect(defaultNode.getDefaultCryptoProvider()).toBe(nodeCryptoProvider)
    expect(defaultPortable.getDefaultCryptoProvider()).toBe(nobleCryptoProvider)
  })

  it('default.browser settles on WebCrypto where Ed25519 works', async () => {
    const p = defaultBrowser.getDefaultCryptoProvider()
    await p.sha256(new Uint8Array())
    expect(p.name).toBe('webcrypto')
  })
})
