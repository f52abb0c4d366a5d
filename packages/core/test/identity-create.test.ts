/** `createIdentityDocument`: URL, did:key and simple-name agents (SPEC §2.2–2.4, PROFILE §4). */
import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../src/base64url.js'
import { didKeyFragment } from '../src/did-key.js'
import { createIdentityDocument } from '../src/identity/create.js'
import { publicKeyOf } from '../src/identity/document.js'
import { parseTimestamp } from '../src/timestamps.js'
import { AGENT, DID, didDoc, didPk, ENDPOINTS, errorOf, pk1 } from './identity-helpers.js'

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
