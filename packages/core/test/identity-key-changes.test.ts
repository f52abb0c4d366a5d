/** `rotateKey` and `revokeKey` (SPEC §3.1). */
import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../src/base64url.js'
import { didKeyFragment } from '../src/did-key.js'
import { revokeKey, rotateKey } from '../src/identity/create.js'
import { validateIdentityDocument } from '../src/identity/document.js'
import { formatTimestamp, parseTimestamp } from '../src/timestamps.js'
import { DID, didDoc, errorOf, newPublicKey, pk1, pk2, T0, urlDoc } from './identity-helpers.js'

describe('rotateKey', () => {
  it('retires the active key, adds the new one, and leaves the input alone', () => {
    const doc = urlDoc()
    const snapshot = structuredClone(doc)
    const now = T0 + 86_400_000
    const next = rotateKey(doc, { publicKey: pk2, keyId: 'k2' }, { now })
    expect(doc).toEqual(snapshot)
    expect(next).not.toBe(doc)
    expect(next.keys).toEqual([
      { ...doc.keys[0], status: 'retired', retired_date: formatTimestamp(now) },
      {
        key_id: 'k2',
        type: 'ed25519',
        public_key: base64urlEncode(pk2),
        created: formatTimestamp(now),
        status: 'active',
      },
    ])
    expect(next.endpoints).not.toBe(doc.endpoints)
    expect(validateIdentityDocument(next)).toBe(next)
  })

  it('retires every active key and leaves retired and revoked ones as they were', () => {
    const first = rotateKey(urlDoc(), { publicKey: pk2, keyId: 'k2' }, { now: T0 + 1000 })
    const second = rotateKey(first, { publicKey: newPublicKey(), keyId: 'k3' }, { now: T0 + 2000 })
    expect(second.keys.map((k) => [k.key_id, k.status, k.retired_date])).toEqual([
      ['k1', 'retired', formatTimestamp(T0 + 1000)],
      ['k2', 'retired', formatTimestamp(T0 + 2000)],
      ['k3', 'active', undefined],
    ])
  })

  it('defaults the key id to a key prefix and now to the clock', () => {
    const before = Date.now()
    const next = rotateKey(urlDoc(), { publicKey: pk2 })
    expect(next.keys[1]!.key_id).toBe(base64urlEncode(pk2).slice(0, 8))
    expect(parseTimestamp(next.keys[1]!.created)).toBeGreaterThanOrEqual(before)
  })

  it('refuses duplicate key ids and keys already listed', () => {
    expect(errorOf(() => rotateKey(urlDoc(), { publicKey: pk2, keyId: 'k1' })).field).toBe('keyId')
    expect(errorOf(() => rotateKey(urlDoc(), { publicKey: pk1, keyId: 'k2' })).field).toBe(
      'publicKey',
    )
    expect(errorOf(() => rotateKey(urlDoc(), { publicKey: pk2, keyId: 'a#b' })).field).toBe('keyId')
  })

  it('refuses did:key documents with forbidden', () => {
    const e = errorOf(() => rotateKey(didDoc(), { publicKey: pk2, keyId: 'k2' }))
    expect(e.code).toBe('forbidden')
    expect(e.message).toMatch(/create a new did:key identity/)
  })
})

describe('revokeKey', () => {
  it('revokes an active key without touching the input', () => {
    const doc = urlDoc()
    const out = revokeKey(doc, 'k1')
    expect(doc.keys[0]!.status).toBe('active')
    expect(out.keys[0]).toEqual({ ...doc.keys[0], status: 'revoked' })
    expect(validateIdentityDocument(out)).toBe(out)
  })

  it('keeps the retired_date of a retired key', () => {
    const rotated = rotateKey(urlDoc(), { publicKey: pk2, keyId: 'k2' }, { now: T0 + 5000 })
    const out = revokeKey(rotated, 'k1')
    expect(out.keys[0]).toMatchObject({
      status: 'revoked',
      retired_date: formatTimestamp(T0 + 5000),
    })
    expect(out.keys[1]!.status).toBe('active')
  })

  it('reports unknown keys as not_found and refuses did:key', () => {
    expect(errorOf(() => revokeKey(urlDoc(), 'k9')).code).toBe('not_found')
    expect(errorOf(() => revokeKey(didDoc(), didKeyFragment(DID))).code).toBe('forbidden')
  })
})
