/** `validateIdentityDocument`: strict checks of every member, did:key documents (PROFILE §4). */
import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../src/base64url.js'
import { rotateKey } from '../src/identity/create.js'
import { publicKeyOf, validateIdentityDocument } from '../src/identity/document.js'
import { checkKeyUsable } from '../src/identity/key-usability.js'
import { formatTimestamp } from '../src/timestamps.js'
import { AGENT, didDoc, errorOf, pk1, pk2, T0, urlDoc } from './identity-helpers.js'

describe('validateIdentityDocument', () => {
  it('round-trips built documents through JSON', () => {
    for (const doc of [urlDoc(), didDoc(), rotateKey(urlDoc(), { publicKey: pk2, keyId: 'k2' })]) {
      const parsed: unknown = JSON.parse(JSON.stringify(doc))
      expect(validateIdentityDocument(parsed)).toEqual(doc)
    }
  })

  it('keeps unknown members, and keys of unknown types', () => {
    const doc = {
      ...urlDoc(),
      extra: { x: 1 },
      keys: [
        ...urlDoc().keys,
        {
          key_id: 'x1',
          type: 'x25519',
          public_key: 'AAAA',
          created: formatTimestamp(T0),
          status: 'active',
          note: 1,
        },
      ],
      endpoints: { ...urlDoc().endpoints, identity: 'whatever' },
    }
    const valid = validateIdentityDocument(doc)
    expect(valid).toBe(doc)
    expect(valid.extra).toEqual({ x: 1 })
    // Never usable for verification.
    expect(checkKeyUsable(valid, 'x1', T0, T0)).toMatchObject({ ok: false, code: 'unknown_sender' })
    expect(() => publicKeyOf(valid.keys[1]!)).toThrowError(/not an ed25519 key/)
  })

  it('allows several active keys and a revoked key that keeps its retired_date', () => {
    const doc = urlDoc()
    const k = doc.keys[0]!
    doc.keys.push({ ...k, key_id: 'k2', public_key: base64urlEncode(pk2) })
    doc.keys.push({ ...k, key_id: 'k3', status: 'revoked', retired_date: formatTimestamp(T0) })
    doc.keys.push({ ...k, key_id: 'k4', status: 'revoked' })
    expect(validateIdentityDocument(doc)).toBe(doc)
  })

  it('checks expectedAgentId', () => {
    expect(validateIdentityDocument(urlDoc(), { expectedAgentId: AGENT }).agent_id).toBe(AGENT)
    const e = errorOf(() =>
      validateIdentityDocument(urlDoc(), { expectedAgentId: 'https://b.example' }),
    )
    expect(e.field).toBe('agent_id')
  })

  const key0 = () => urlDoc().keys[0]!
  const withKey = (patch: Record<string, unknown>) => {
    const doc = urlDoc() as unknown as Record<string, unknown>
    doc.keys = [{ ...key0(), ...patch }]
    return doc
  }
  const without = (name: string) => {
    const doc = urlDoc() as unknown as Record<string, unknown>
    delete doc[name]
    return doc
  }
  const withMember = (name: string, value: unknown) => ({ ...urlDoc(), [name]: value })

  it.each([
    ['an array', [], undefined],
    ['null', null, undefined],
    ['a string', 'doc', undefined],
    ['agentmsg missing', without('agentmsg'), 'agentmsg'],
    ['agentmsg 4', withMember('agentmsg', 4), 'agentmsg'],
    ['agentmsg "5"', withMember('agentmsg', '5'), 'agentmsg'],
    ['agentmsg 5.5', withMember('agentmsg', 5.5), 'agentmsg'],
    ['agent_id missing', without('agent_id'), 'agent_id'],
    ['agent_id not normal', withMember('agent_id', `${AGENT}/`), 'agent_id'],
    ['agent_id did:web', withMember('agent_id', 'did:web:a.example'), 'agent_id'],
    ['display missing', without('display'), 'display'],
    ['display a number', withMember('display', 1), 'display'],
    ['keys missing', without('keys'), 'keys'],
    ['keys empty', withMember('keys', []), 'keys'],
    ['keys an object', withMember('keys', {}), 'keys'],
    ['a key that is not an object', withMember('keys', ['k1']), 'keys[0]'],
    ['key_id missing', withKey({ key_id: undefined }), 'keys[0].key_id'],
    ['key_id empty', withKey({ key_id: '' }), 'keys[0].key_id'],
    ['key_id with #', withKey({ key_id: `${AGENT}#k1` }), 'keys[0].key_id'],
    ['type missing', withKey({ type: undefined }), 'keys[0].type'],
    ['public_key missing', withKey({ public_key: undefined }), 'keys[0].public_key'],
    [
      'public_key padded',
      withKey({ public_key: `${base64urlEncode(pk1)}=` }),
      'keys[0].public_key',
    ],
    [
      'public_key standard base64',
      withKey({
        public_key: Buffer.from(new Uint8Array(32).fill(0xfb)).toString('base64').slice(0, 43),
      }),
      'keys[0].public_key',
    ],
    [
      'public_key 31 bytes',
      withKey({ public_key: base64urlEncode(pk1.slice(1)) }),
      'keys[0].public_key',
    ],
    [
      'public_key 33 bytes',
      withKey({ public_key: base64urlEncode(new Uint8Array(33)) }),
      'keys[0].public_key',
    ],
    [
      'public_key with non-zero trailing bits',
      withKey({ public_key: `${base64urlEncode(pk1).slice(0, 42)}B` }),
      'keys[0].public_key',
    ],
    ['created missing', withKey({ created: undefined }), 'keys[0].created'],
    ['created with offset', withKey({ created: '2026-01-01T00:00:00+00:00' }), 'keys[0].created'],
    ['status unknown', withKey({ status: 'expired' }), 'keys[0].status'],
    ['status missing', withKey({ status: undefined }), 'keys[0].status'],
    ['retired without retired_date', withKey({ status: 'retired' }), 'keys[0].retired_date'],
    [
      'retired with a malformed retired_date',
      withKey({ status: 'retired', retired_date: '2026-02-30T00:00:00Z' }),
      'keys[0].retired_date',
    ],
    [
      'revoked with a malformed retired_date',
      withKey({ status: 'revoked', retired_date: 'yesterday' }),
      'keys[0].retired_date',
    ],
    [
      'active with a retired_date',
      withKey({ retired_date: formatTimestamp(T0) }),
      'keys[0].retired_date',
    ],
    [
      'duplicate key ids',
      withMember('keys', [key0(), { ...key0(), public_key: base64urlEncode(pk2) }]),
      'keys[1].key_id',
    ],
    ['endpoints missing', without('endpoints'), 'endpoints'],
    ['endpoints a string', withMember('endpoints', 'x'), 'endpoints'],
    [
      'another inbox for a URL agent',
      withMember('endpoints', { ...urlDoc().endpoints, inbox: 'https://b.example/inbox' }),
      'endpoints.inbox',
    ],
    [
      'another capabilities endpoint for a URL agent',
      withMember('endpoints', { ...urlDoc().endpoints, capabilities: undefined }),
      'endpoints.capabilities',
    ],
    ['relay not an object', withMember('relay', ['https://r.example']), 'relay'],
    ['relay.urls missing', withMember('relay', { preference: 'any' }), 'relay.urls'],
    [
      'relay.urls with a non-normal URL',
      withMember('relay', { urls: ['https://r.example', 'https://r.example/'], preference: 'any' }),
      'relay.urls[1]',
    ],
    [
      'relay.preference unknown',
      withMember('relay', { urls: ['https://r.example'], preference: 'random' }),
      'relay.preference',
    ],
    ['relay.preference missing', withMember('relay', { urls: [] }), 'relay.preference'],
  ])('refuses %s', (_name, doc, field) => {
    const e = errorOf(() => validateIdentityDocument(doc))
    expect(e.code).toBe('invalid_format')
    expect(e.field).toBe(field)
  })

  describe('did:key documents', () => {
    const patched = (patch: Record<string, unknown>) => {
      const doc = didDoc()
      return { ...doc, keys: [{ ...doc.keys[0]!, ...patch }] }
    }

    it.each([
      ['a second key', { ...didDoc(), keys: [...didDoc().keys, { ...urlDoc().keys[0]! }] }, 'keys'],
      ['another public key', patched({ public_key: base64urlEncode(pk1) }), 'keys[0].public_key'],
      ['another key id', patched({ key_id: 'k1' }), 'keys[0].key_id'],
      [
        'a retired key',
        patched({ status: 'retired', retired_date: formatTimestamp(T0) }),
        'keys[0].status',
      ],
      ['another key type', patched({ type: 'x25519' }), 'keys[0].type'],
      [
        'non-normal endpoints',
        {
          ...didDoc(),
          endpoints: { inbox: 'http://x.example', capabilities: 'https://x.example' },
        },
        'endpoints.inbox',
      ],
    ])('refuses %s', (_name, doc, field) => {
      const e = errorOf(() => validateIdentityDocument(doc))
      expect(e.code).toBe('invalid_format')
      expect(e.field).toBe(field)
    })
  })
})
