/**
 * URL agents: keys from identity documents, with rotation, revocation and refetch limits
 * (PROFILE §4).
 */
import { describe, expect, it } from 'vitest'
import { createIdentityDocument, revokeKey, rotateKey } from '../src/identity/create.js'
import type { IdentityDocument } from '../src/identity/document.js'
import type { IdentityFetchResult } from '../src/identity-resolver.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import type { KeyResolver } from '../src/resolver.js'
import { signMessage } from '../src/sign.js'
import { verifyMessage } from '../src/verify.js'
import { sampleMessage } from './fixtures.js'
import { alice, failure } from './sign-verify-helpers.js'

describe('URL agents: identity documents, rotation, revocation', () => {
  const carol = 'https://carol.example/agents/carol'
  let doc: IdentityDocument
  let fetches = 0
  let answer: () => IdentityFetchResult
  let now = Date.parse('2026-11-21T12:00:00Z')
  const fetcher = async (): Promise<IdentityFetchResult> => {
    fetches++
    return answer()
  }
  const mkResolver = (): KeyResolver =>
    createKeyResolver({ fetchIdentity: fetcher, now: () => now })

  it('level 2 from the document; cache; retired keys within bounds; revoked refused', async () => {
    const k1 = await generateKeyPair()
    doc = createIdentityDocument({
      agentId: carol,
      publicKey: k1.publicKey,
      keyId: 'k1',
      created: now - 86_400_000,
    })
    answer = () => ({ status: 'ok', document: doc, maxAgeSeconds: 600 })
    const r = mkResolver()
    const m1 = await signMessage(
      sampleMessage(carol, alice.id, 100, now),
      ed25519Signer(k1, `${carol}#k1`),
      { created: now },
    )
    expect(await verifyMessage(m1, r, { now })).toMatchObject({
      level: 2,
      source: 'identity-document',
    })
    await verifyMessage(m1, r, { now })
    expect(fetches).toBe(1)

    // Rotate: k2 active, k1 retired now.
    const k2 = await generateKeyPair()
    doc = rotateKey(doc, { publicKey: k2.publicKey, keyId: 'k2' }, { now })
    const m2 = await signMessage(
      sampleMessage(carol, alice.id, 100, now),
      ed25519Signer(k2, `${carol}#k2`),
      { created: now },
    )
    // k2 is not in the cached document, fetched less than a minute ago → 503, try later.
    expect((await failure(verifyMessage(m2, r, { now }))).code).toBe('unavailable')
    // A minute on, one forced refetch finds it.
    now += 60_000
    expect((await verifyMessage(m2, r, { now })).level).toBe(2)
    expect(fetches).toBe(2)
    // k1 still verifies during the transition period…
    expect((await verifyMessage(m1, r, { now: now + 13 * 86_400_000 })).level).toBe(2)
    // …but not after it, and not for signatures created > 5 min after retirement.
    const late = await failure(verifyMessage(m1, r, { now: now + 14 * 86_400_000 + 1 }))
    expect(late.code).toBe('key_revoked')
    expect(late.message).toMatch(/transition/)
    const backdated = await signMessage(
      sampleMessage(carol, alice.id, 100, now),
      ed25519Signer(k1, `${carol}#k1`),
      { created: now + 5 * 60_000 + 1 },
    )
    expect((await failure(verifyMessage(backdated, r, { now: now + 6 * 60_000 }))).code).toBe(
      'key_revoked',
    )

    // Revoked → key_revoked with an explanation.
    doc = revokeKey(doc, 'k1', { now })
    const r2 = mkResolver()
    const e = await failure(verifyMessage(m1, r2, { now }))
    expect(e.code).toBe('key_revoked')
    expect(e.message).toMatch(/revoked/)
  })

  it('unknown key: one refetch a minute, then 503 unavailable with Retry-After', async () => {
    const k = await generateKeyPair()
    doc = createIdentityDocument({ agentId: carol, publicKey: k.publicKey, keyId: 'k1' })
    answer = () => ({ status: 'ok', document: doc })
    fetches = 0
    const r = mkResolver()
    const stranger = await generateKeyPair()
    const m = await signMessage(
      sampleMessage(carol, alice.id, 100, now),
      ed25519Signer(stranger, `${carol}#k9`),
      { created: now },
    )
    // First lookup fetches the document: its word is final → unknown_sender.
    expect((await failure(verifyMessage(m, r, { now }))).code).toBe('unknown_sender')
    // Within the minute, the cached document lacks k9 and the refetch budget is spent → 503.
    now += 10_000
    const busy = await failure(verifyMessage(m, r, { now }))
    expect(busy.code).toBe('unavailable')
    expect(busy.status).toBe(503)
    expect(busy.retryAfter).toBeGreaterThanOrEqual(50)
    expect(fetches).toBe(1)
    // After the minute: one refetch, the document still lacks it → unknown_sender.
    now += 60_000
    expect((await failure(verifyMessage(m, r, { now }))).code).toBe('unknown_sender')
    expect(fetches).toBe(2)
  })

  it('a document that cannot be fetched now → 503; a wrong agent_id → unknown_sender', async () => {
    const k = await generateKeyPair()
    const m = await signMessage(
      sampleMessage(carol, alice.id, 100, now),
      ed25519Signer(k, `${carol}#k1`),
      { created: now },
    )
    answer = () => ({ status: 'unavailable', reason: 'timeout', retryAfter: 7 })
    const e = await failure(verifyMessage(m, mkResolver(), { now }))
    expect(e).toMatchObject({ code: 'unavailable', retryAfter: 7 })
    answer = () => ({
      status: 'ok',
      document: createIdentityDocument({
        agentId: 'https://mallory.example',
        publicKey: k.publicKey,
        keyId: 'k1',
      }),
    })
    expect((await failure(verifyMessage(m, mkResolver(), { now }))).code).toBe('unknown_sender')
  })
})
