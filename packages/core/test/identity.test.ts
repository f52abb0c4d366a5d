import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../src/base64url.js'
import { didKeyFragment, didKeyFromPublicKey } from '../src/did-key.js'
import { isAgentMsgError } from '../src/errors.js'
import {
  DEFAULT_TRANSITION_MS,
  checkKeyUsable,
  createIdentityDocument,
  publicKeyOf,
  revokeKey,
  rotateKey,
  validateIdentityDocument,
  type IdentityDocument,
} from '../src/identity.js'
import { formatTimestamp, parseTimestamp } from '../src/timestamps.js'

function newPublicKey(): Uint8Array {
  const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' })
  return new Uint8Array(Buffer.from(jwk.x!, 'base64url'))
}

/** The error `fn` throws, asserted to be an AgentMsgError. */
function errorOf(fn: () => unknown) {
  try {
    fn()
  } catch (e) {
    if (isAgentMsgError(e)) return e
    throw e
  }
  throw new Error('expected a throw')
}

const AGENT = 'https://a.example/agents/alice'
const T0 = Date.UTC(2026, 0, 1)
const pk1 = newPublicKey()
const pk2 = newPublicKey()
const didPk = newPublicKey()
const DID = didKeyFromPublicKey(didPk)
const ENDPOINTS = {
  inbox: 'https://relay.example/inbox',
  capabilities: 'https://relay.example/capabilities',
}

function urlDoc(): IdentityDocument {
  return createIdentityDocument({
    agentId: AGENT,
    display: 'Alice',
    publicKey: pk1,
    keyId: 'k1',
    created: T0,
  })
}

function didDoc(): IdentityDocument {
  return createIdentityDocument({ agentId: DID, publicKey: didPk, endpoints: ENDPOINTS })
}

describe('createIdentityDocument', () => {
  it('builds a URL agent document with the well-known endpoints', () => {
    const doc = createIdentityDocument({
      agentId: AGENT,
      display: 'Alice',
      publicKey: pk1,
      keyId: 'k1',
      created: '2026-01-01T00:00:00Z',
      relays: ['https://relay.example', 'https://relay2.example/r'],
      relayPreference: 'ordered',
    })
    expect(doc).toEqual({
      agentmsg: 5,
      agent_id: AGENT,
      display: 'Alice',
      keys: [
        {
          key_id: 'k1',
          type: 'ed25519',
          public_key: base64urlEncode(pk1),
          // Writers emit milliseconds even when given fewer digits.
          created: '2026-01-01T00:00:00.000Z',
          status: 'active',
        },
      ],
      endpoints: {
        inbox: `${AGENT}/.well-known/agentmsg/inbox`,
        capabilities: `${AGENT}/.well-known/agentmsg/capabilities`,
      },
      relay: { urls: ['https://relay.example', 'https://relay2.example/r'], preference: 'ordered' },
    })
  })

  it('defaults display, created, key id (a key prefix) and relay preference', () => {
    const before = Date.now()
    const doc = createIdentityDocument({
      agentId: AGENT,
      publicKey: pk1,
      relays: ['https://relay.example'],
    })
    expect(doc.display).toBe(AGENT)
    expect(doc.keys[0]!.key_id).toBe(base64urlEncode(pk1).slice(0, 8))
    expect(parseTimestamp(doc.keys[0]!.created)).toBeGreaterThanOrEqual(before)
    expect(doc.relay).toEqual({ urls: ['https://relay.example'], preference: 'any' })
    expect(
      createIdentityDocument({ agentId: AGENT, publicKey: pk1, relays: [] }),
    ).not.toHaveProperty('relay')
  })

  it('accepts the well-known endpoints passed explicitly for a URL agent, and nothing else', () => {
    const wellKnown = {
      inbox: `${AGENT}/.well-known/agentmsg/inbox`,
      capabilities: `${AGENT}/.well-known/agentmsg/capabilities`,
    }
    expect(
      createIdentityDocument({ agentId: AGENT, publicKey: pk1, endpoints: wellKnown }).endpoints,
    ).toEqual(wellKnown)
    const e = errorOf(() =>
      createIdentityDocument({ agentId: AGENT, publicKey: pk1, endpoints: ENDPOINTS }),
    )
    expect(e.field).toBe('endpoints')
  })

  it('builds a did:key document with the DID key and fragment', () => {
    const doc = didDoc()
    expect(doc.agent_id).toBe(DID)
    expect(doc.keys).toHaveLength(1)
    expect(doc.keys[0]!.key_id).toBe(didKeyFragment(DID))
    expect(doc.keys[0]!.key_id).toBe(DID.slice('did:key:'.length))
    expect(publicKeyOf(doc.keys[0]!)).toEqual(didPk)
    expect(doc.endpoints).toEqual(ENDPOINTS)
  })

  it('builds a simple-name document when endpoints are given', () => {
    const doc = createIdentityDocument({ agentId: 'alice', publicKey: pk1, endpoints: ENDPOINTS })
    expect(doc.agent_id).toBe('alice')
    expect(doc.endpoints).toEqual(ENDPOINTS)
  })

  it.each([
    ['a bad agent id', { agentId: 'https://a.example/', publicKey: pk1 }, 'agentId'],
    ['a short key', { agentId: AGENT, publicKey: pk1.slice(1) }, 'publicKey'],
    [
      'a key that is not bytes',
      { agentId: AGENT, publicKey: [...pk1] as unknown as Uint8Array },
      'publicKey',
    ],
    ['a key id with #', { agentId: AGENT, publicKey: pk1, keyId: 'k#1' }, 'keys[0].key_id'],
    ['an empty key id', { agentId: AGENT, publicKey: pk1, keyId: '' }, 'keys[0].key_id'],
    ['a bad created', { agentId: AGENT, publicKey: pk1, created: '2026-01-01' }, 'created'],
    ['a bad relay', { agentId: AGENT, publicKey: pk1, relays: ['http://r.example'] }, 'relays[0]'],
    [
      'did:key with another key',
      { agentId: DID, publicKey: pk1, endpoints: ENDPOINTS },
      'publicKey',
    ],
    [
      'did:key with another key id',
      { agentId: DID, publicKey: didPk, keyId: 'k1', endpoints: ENDPOINTS },
      'keyId',
    ],
    ['did:key without endpoints', { agentId: DID, publicKey: didPk }, 'endpoints'],
    ['a name without endpoints', { agentId: 'alice', publicKey: pk1 }, 'endpoints'],
    [
      'non-normal endpoints',
      {
        agentId: 'alice',
        publicKey: pk1,
        endpoints: { ...ENDPOINTS, inbox: 'https://R.example/in' },
      },
      'endpoints.inbox',
    ],
  ])('refuses %s', (_name, options, field) => {
    const e = errorOf(() => createIdentityDocument(options))
    expect(e.code).toBe('invalid_format')
    expect(e.field).toBe(field)
  })
})

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

describe('checkKeyUsable', () => {
  const RETIRED = T0 + 30 * 86_400_000
  const FIVE_MIN = 5 * 60_000
  const rotated = rotateKey(urlDoc(), { publicKey: pk2, keyId: 'k2' }, { now: RETIRED })

  it('accepts active keys whatever the times', () => {
    const r = checkKeyUsable(rotated, 'k2', RETIRED + 1e12, RETIRED + 1e12)
    expect(r).toEqual({ ok: true, key: rotated.keys[1] })
  })

  it('accepts a retired key up to retired_date + 5 minutes for created', () => {
    expect(checkKeyUsable(rotated, 'k1', RETIRED - 1000, RETIRED).ok).toBe(true)
    expect(checkKeyUsable(rotated, 'k1', RETIRED + FIVE_MIN, RETIRED + FIVE_MIN).ok).toBe(true)
    const late = checkKeyUsable(rotated, 'k1', RETIRED + FIVE_MIN + 1, RETIRED + FIVE_MIN + 1)
    expect(late).toEqual({
      ok: false,
      code: 'key_revoked',
      message: `signature created at ${formatTimestamp(RETIRED + FIVE_MIN + 1)}, more than 5 minutes after key k1 of ${AGENT} was retired at ${formatTimestamp(RETIRED)}`,
    })
  })

  it('accepts a retired key until retired_date + 14 days', () => {
    expect(DEFAULT_TRANSITION_MS).toBe(14 * 86_400_000)
    expect(checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + DEFAULT_TRANSITION_MS).ok).toBe(true)
    const r = checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + DEFAULT_TRANSITION_MS + 1)
    expect(r).toEqual({
      ok: false,
      code: 'key_revoked',
      message: `key k1 of ${AGENT} was retired at ${formatTimestamp(RETIRED)} and its 14-day transition period ended at ${formatTimestamp(RETIRED + DEFAULT_TRANSITION_MS)}`,
    })
  })

  it('honours a custom transition period', () => {
    const transitionMs = 2 * 3_600_000
    expect(
      checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + transitionMs, { transitionMs }).ok,
    ).toBe(true)
    const r = checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + transitionMs + 1, { transitionMs })
    expect(r.ok).toBe(false)
    expect(!r.ok && r.message).toMatch(/2-hour transition period/)
    expect(checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + 1, { transitionMs: 0 }).ok).toBe(false)
    expect(() => checkKeyUsable(rotated, 'k1', RETIRED, RETIRED, { transitionMs: -1 })).toThrow(
      RangeError,
    )
  })

  it('refuses revoked keys, also within the bounds a retired key would have', () => {
    const revoked = revokeKey(rotated, 'k1')
    expect(checkKeyUsable(revoked, 'k1', RETIRED, RETIRED)).toEqual({
      ok: false,
      code: 'key_revoked',
      message: `key k1 of ${AGENT} was revoked`,
    })
    expect(checkKeyUsable(revokeKey(urlDoc(), 'k1'), 'k1', T0, T0).ok).toBe(false)
  })

  it('reports keys the document does not list as unknown_sender', () => {
    const r = checkKeyUsable(rotated, 'k9', RETIRED, RETIRED)
    expect(r).toMatchObject({ ok: false, code: 'unknown_sender' })
    expect(!r.ok && r.message).toMatch(/k9/)
  })

  it('refuses NaN times rather than letting them pass the bounds', () => {
    expect(() => checkKeyUsable(rotated, 'k1', NaN, RETIRED)).toThrow(RangeError)
    expect(() => checkKeyUsable(rotated, 'k1', RETIRED, NaN)).toThrow(RangeError)
  })
})

describe('publicKeyOf', () => {
  it('decodes the public key', () => {
    expect(publicKeyOf(urlDoc().keys[0]!)).toEqual(pk1)
  })

  it('refuses malformed keys', () => {
    const k = urlDoc().keys[0]!
    expect(
      errorOf(() => publicKeyOf({ ...k, public_key: base64urlEncode(pk1.slice(2)) })).code,
    ).toBe('invalid_format')
    expect(errorOf(() => publicKeyOf({ ...k, public_key: `${k.public_key}=` })).code).toBe(
      'invalid_format',
    )
  })
})
