/** Relay agent auth (PROFILE §9): the created window, nonce memory, ownership and key resolution. */
import { beforeAll, describe, expect, it } from 'vitest'
import type { AgentMsgError } from '../src/errors.js'
import { NonceMemory } from '../src/http-signature/nonces.js'
import { signRequest } from '../src/http-signature/sign.js'
import { verifyRequest } from '../src/http-signature/verify.js'
import { createIdentityDocument, revokeKey, rotateKey } from '../src/identity/create.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import { KeyStore } from '../src/key-store.js'
import { ed25519Signer, generateKeyPair, type KeyPair, type Signer } from '../src/keys.js'
import type { KeyResolver } from '../src/resolver.js'
import {
  alice,
  BASE,
  bob,
  enc,
  getHeaders,
  messagesUrl,
  NONCE,
  NOW,
  rejects,
  T,
  verifyInput,
} from './http-signature-fixtures.js'

describe('verifyRequest freshness and ownership', () => {
  it('created within ±5 minutes, boundaries included', async () => {
    const at = (now: number) => verifyRequest(verifyInput({ headers: getHeaders, now }))
    await at(NOW + 300_000)
    await at(NOW - 300_000)
    await rejects(at(NOW + 300_001), 'invalid_signature')
    await rejects(at(NOW - 300_001), 'invalid_signature')
    await rejects(at(NOW + 3_600_000), 'invalid_signature')
  })

  it('a reused (keyid, nonce) is refused for 10 minutes, then accepted', async () => {
    const nonces = new NonceMemory()
    await verifyRequest(verifyInput({ headers: getHeaders, nonces }))
    await rejects(verifyRequest(verifyInput({ headers: getHeaders, nonces })), 'invalid_signature')
    // Another request (other path) with the same nonce and key is a replay too.
    const other = await signRequest({
      method: 'GET',
      url: `${BASE}/relay/stream?agent=${enc(alice.id)}`,
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `${BASE}/relay/stream?agent=${enc(alice.id)}`,
          headers: other,
          nonces,
        }),
      ),
      'invalid_signature',
    )
    // Another key may use the same nonce.
    const byBob = await signRequest({
      method: 'GET',
      url: messagesUrl(bob.id),
      signer: bob.signer,
      created: T,
      nonce: NONCE,
    })
    await verifyRequest(verifyInput({ targetUri: messagesUrl(bob.id), headers: byBob, nonces }))
    // Ten minutes later, with a fresh created, the nonce is usable again.
    const later = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: alice.signer,
      created: T + 600,
      nonce: NONCE,
    })
    await rejects(
      verifyRequest(verifyInput({ headers: later, nonces, now: NOW + 600_000 })),
      'invalid_signature',
    )
    await verifyRequest(verifyInput({ headers: later, nonces, now: NOW + 600_001 }))
  })

  it('bad signatures do not consume the nonce', async () => {
    const nonces = new NonceMemory()
    await rejects(
      verifyRequest(verifyInput({ method: 'POST', headers: getHeaders, nonces })),
      'invalid_signature',
    )
    expect(nonces.size).toBe(0)
    await verifyRequest(verifyInput({ headers: getHeaders, nonces }))
  })

  it("another agent's mailbox → forbidden, but only after the signature verified", async () => {
    await rejects(
      verifyRequest(verifyInput({ headers: getHeaders, expectedAgent: bob.id })),
      'forbidden',
    )
    await rejects(
      verifyRequest(verifyInput({ method: 'PUT', headers: getHeaders, expectedAgent: bob.id })),
      'invalid_signature',
    )
    // Bob signs a request for Alice's mailbox with his own key.
    const h = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: bob.signer,
      created: T,
      nonce: NONCE,
    })
    const e = await rejects(
      verifyRequest(verifyInput({ headers: h, expectedAgent: alice.id })),
      'forbidden',
    )
    expect(e.status).toBe(403)
  })
})

describe('verifyRequest key resolution', () => {
  const urlAgent = 'https://alice.example'
  let keys: KeyPair
  let signer: Signer
  const url = messagesUrl(urlAgent)

  beforeAll(async () => {
    keys = await generateKeyPair()
    signer = ed25519Signer(keys, `${urlAgent}#k1`)
  })

  const docResolver = (
    document: ReturnType<typeof createIdentityDocument>,
    publicKey: Uint8Array,
  ): KeyResolver => ({
    async resolve(lookup) {
      if (lookup.agent !== urlAgent || lookup.fragment !== 'k1')
        return { status: 'not_found', reason: 'no such key' }
      return {
        status: 'found',
        key: { alg: 'ed25519', publicKey, source: 'identity-document', document },
      }
    },
  })

  it('an identity-document key verifies at level 2; a revoked one → key_revoked', async () => {
    const doc = createIdentityDocument({
      agentId: urlAgent,
      publicKey: keys.publicKey,
      keyId: 'k1',
      created: NOW - 3_600_000,
    })
    const h = await signRequest({ method: 'GET', url, signer, created: T, nonce: NONCE })
    const r = await verifyRequest(
      verifyInput({
        targetUri: url,
        headers: h,
        resolver: docResolver(doc, keys.publicKey),
        expectedAgent: urlAgent,
      }),
    )
    expect(r).toMatchObject({
      agent: urlAgent,
      keyId: `${urlAgent}#k1`,
      source: 'identity-document',
      level: 2,
    })
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: url,
          headers: h,
          resolver: docResolver(revokeKey(doc, 'k1'), keys.publicKey),
        }),
      ),
      'key_revoked',
    )
    // Retired more than 5 minutes before created → key_revoked too.
    const next = await generateKeyPair()
    const rotated = rotateKey(
      doc,
      { publicKey: next.publicKey, keyId: 'k2' },
      { now: NOW - 600_000 },
    )
    await rejects(
      verifyRequest(
        verifyInput({ targetUri: url, headers: h, resolver: docResolver(rotated, keys.publicKey) }),
      ),
      'key_revoked',
    )
  })

  it('a pinned key verifies; an unresolvable key → unknown_sender', async () => {
    const h = await signRequest({ method: 'GET', url, signer, created: T, nonce: NONCE })
    const keyStore = new KeyStore()
    await rejects(
      verifyRequest(
        verifyInput({ targetUri: url, headers: h, resolver: createKeyResolver({ keyStore }) }),
      ),
      'unknown_sender',
    )
    await keyStore.pin(urlAgent, 'k1', keys.publicKey)
    const r = await verifyRequest(
      verifyInput({ targetUri: url, headers: h, resolver: createKeyResolver({ keyStore }) }),
    )
    expect(r.level).toBe(2)
  })

  it('a lookup that failed for now → unavailable with retryAfter', async () => {
    const h = await signRequest({ method: 'GET', url, signer, created: T, nonce: NONCE })
    const down: KeyResolver = {
      resolve: async () => ({ status: 'unavailable', reason: 'timeout', retryAfter: 42 }),
    }
    const nonces = new NonceMemory()
    const e = await rejects(
      verifyRequest(verifyInput({ targetUri: url, headers: h, resolver: down, nonces })),
      'unavailable',
    )
    expect(e.retryAfter).toBe(42)
    expect(e.status).toBe(503)
    expect(nonces.size).toBe(0)
  })
})

describe('NonceMemory', () => {
  it('remembers pairs for exactly the retention period', () => {
    let now = 1000
    const m = new NonceMemory({ now: () => now })
    expect(m.checkAndRemember('k#1', 'n')).toBe('fresh')
    expect(m.checkAndRemember('k#1', 'n')).toBe('replay')
    expect(m.checkAndRemember('k#2', 'n')).toBe('fresh')
    expect(m.checkAndRemember('k#1', 'm')).toBe('fresh')
    now += 600_000
    expect(m.checkAndRemember('k#1', 'n')).toBe('replay')
    now += 1
    expect(m.checkAndRemember('k#1', 'n')).toBe('fresh')
  })

  it('is bounded: prunes expired pairs, then refuses with unavailable rather than forgetting', () => {
    let now = 0
    const m = new NonceMemory({ now: () => now, maxEntries: 3 })
    m.checkAndRemember('k#1', 'a')
    now = 1000
    m.checkAndRemember('k#1', 'b')
    m.checkAndRemember('k#1', 'c')
    const e = (() => {
      try {
        m.checkAndRemember('k#1', 'd')
      } catch (err) {
        return err as AgentMsgError
      }
      return undefined
    })()
    expect(e?.code).toBe('unavailable')
    expect(e?.retryAfter).toBe(599) // until 'a' expires at 600_000
    expect(m.size).toBe(3)
    // A live pair is still refused as a replay while full.
    expect(m.checkAndRemember('k#1', 'b')).toBe('replay')
    now = 600_001 // 'a' expired
    expect(m.checkAndRemember('k#1', 'd')).toBe('fresh')
    expect(m.size).toBe(3)
    expect(m.checkAndRemember('k#1', 'b')).toBe('replay')
  })

  it('prunes expired pairs even when the clock stepped back', () => {
    let now = 10_000_000
    const m = new NonceMemory({ now: () => now, maxEntries: 2 })
    m.checkAndRemember('k#1', 'late')
    now = 0
    m.checkAndRemember('k#1', 'early')
    now = 5_000_000 // 'early' expired, 'late' not; 'late' comes first in insertion order
    expect(m.checkAndRemember('k#1', 'x')).toBe('fresh')
    expect(m.checkAndRemember('k#1', 'late')).toBe('replay')
  })

  it('a full memory makes verifyRequest answer unavailable', async () => {
    const nonces = new NonceMemory({ maxEntries: 1, now: () => NOW })
    const h1 = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    const h2 = await signRequest({
      method: 'GET',
      url: messagesUrl(alice.id),
      signer: alice.signer,
      created: T,
      nonce: 'BBBBBBBBBBBBBBBBBBBBBA',
    })
    await verifyRequest(verifyInput({ headers: h1, nonces }))
    await rejects(verifyRequest(verifyInput({ headers: h2, nonces })), 'unavailable')
  })
})
