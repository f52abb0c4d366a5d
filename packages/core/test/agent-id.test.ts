import { describe, expect, it } from 'vitest'
import {
  agentEndpoints,
  assertRelayUrl,
  formatKeyId,
  isAgentId,
  normalizeAgentUrl,
  parseAgentId,
  splitKeyId,
} from '../src/agent-id.js'
import { didKeyFromPublicKey } from '../src/did-key.js'
import { errorOf, newPublicKey } from './identity-helpers.js'

// The W3C did:key vector for the all-zero seed, and the X25519 key agreement key beside it.
const W3C_DID = 'did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp'
const X25519_DID = 'did:key:z6LShs9GGnqk85isEBzzshkuVWrVKsRp24GnDuHk8QWkARMW'

describe('parseAgentId', () => {
  it.each([
    ['bob', 'name'],
    ['a', 'name'],
    ['A-Za_z.0-9', 'name'],
    ['x'.repeat(64), 'name'],
    ['did', 'name'],
    ['https', 'name'],
    ['https://a.example', 'url'],
    ['https://a.example/agents/bob', 'url'],
    ['https://a.example:8443/agents/bob', 'url'],
    ['https://xn--bcher-kva.example', 'url'],
    ['https://127.0.0.1', 'url'],
    ['https://[::1]:8443/x', 'url'],
    ['https://a.example/a%20b', 'url'],
    ['https://a.example/x/y', 'url'],
    [W3C_DID, 'did:key'],
  ])('accepts %s as %s', (id, kind) => {
    expect(parseAgentId(id)).toEqual({ kind, id })
    expect(isAgentId(id)).toBe(true)
  })

  it('accepts a freshly generated Ed25519 did:key', () => {
    const did = didKeyFromPublicKey(newPublicKey())
    expect(parseAgentId(did).kind).toBe('did:key')
  })

  it.each([
    ['empty', '', /empty/],
    ['65 characters', 'x'.repeat(65), /simple name/],
    ['space in a name', 'bob smith', /simple name/],
    ['non-ASCII name', 'bøb', /simple name/],
    ['name with @', 'bob@a.example', /simple name/],
    ['http', 'http://a.example', /https, also in development/],
    ['upper-case scheme', 'HTTPS://a.example', /simple name/],
    ['ftp', 'ftp://a.example', /simple name/],
    ['https without //', 'https:a.example', /https URL/],
    [
      'trailing slash on the root',
      'https://a.example/',
      /normal form.*expected https:\/\/a\.example$/,
    ],
    ['trailing slash on a path', 'https://a.example/agents/bob/', /normal form/],
    ['double trailing slash', 'https://a.example//', /normal form/],
    ['upper-case host', 'https://A.example', /normal form.*https:\/\/a\.example$/],
    ['default port', 'https://a.example:443', /normal form/],
    ['dot segments', 'https://a.example/x/../y', /normal form.*https:\/\/a\.example\/y$/],
    ['single dot segment', 'https://a.example/./y', /normal form/],
    ['unicode host', 'https://bücher.example', /xn--bcher-kva/],
    ['unescaped space', 'https://a.example/a b', /normal form/],
    ['userinfo', 'https://user@a.example', /userinfo/],
    ['user and password', 'https://u:p@a.example', /userinfo/],
    ['empty userinfo', 'https://@a.example', /userinfo/],
    ['query', 'https://a.example/x?y=1', /query/],
    ['empty query', 'https://a.example?', /query/],
    ['fragment', 'https://a.example/x#k1', /fragment/],
    ['empty fragment', 'https://a.example#', /fragment/],
    ['no host', 'https://', /valid URL/],
    ['backslashes', 'https:\\\\a.example', /https URL/],
    ['did:web', 'did:web:a.example', /did:key/],
    ['did:key of X25519', X25519_DID, /did:key/],
    ['did:key garbage', 'did:key:z6MkNOTBASE58l0O', /did:key/],
    ['did:key without z', 'did:key:6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp', /did:key/],
    ['did:key URL', `${W3C_DID}#${W3C_DID.slice(8)}`, /did:key/],
    ['upper-case DID', W3C_DID.replace('did:key', 'DID:KEY'), /simple name/],
  ])('refuses %s', (_name, id, message) => {
    expect(isAgentId(id)).toBe(false)
    const e = errorOf(() => parseAgentId(id, 'from.agent'))
    expect(e.code).toBe('invalid_format')
    expect(e.field).toBe('from.agent')
    expect(e.message).toMatch(/^from\.agent: /)
    expect(e.message).toMatch(message)
  })

  it('refuses non-strings, naming the default field', () => {
    for (const x of [undefined, null, 42, {}, ['bob']]) {
      expect(isAgentId(x)).toBe(false)
      const e = errorOf(() => parseAgentId(x))
      expect(e.field).toBe('agent')
    }
  })
})

describe('assertRelayUrl', () => {
  it('applies the agent URL rule', () => {
    expect(assertRelayUrl('https://relay.example', 'relay.urls[0]')).toBe('https://relay.example')
    expect(assertRelayUrl('https://relay.example/r1')).toBe('https://relay.example/r1')
    for (const bad of ['https://relay.example/', 'http://relay.example', 'relay', W3C_DID, 7]) {
      const e = errorOf(() => assertRelayUrl(bad, 'from.relays[1]'))
      expect(e.code).toBe('invalid_format')
      expect(e.field).toBe('from.relays[1]')
    }
  })
})

describe('normalizeAgentUrl', () => {
  it.each([
    ['https://a.example', 'https://a.example'],
    ['https://a.example/', 'https://a.example'],
    ['  https://a.example/agents/bob/ \n', 'https://a.example/agents/bob'],
    ['HTTPS://A.EXAMPLE/Agents', 'https://a.example/Agents'],
    ['https://a.example:443/x', 'https://a.example/x'],
    ['https://a.example:8443/x', 'https://a.example:8443/x'],
    ['https://a.example/x/../y/./z', 'https://a.example/y/z'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
    ['https://a.example/a b', 'https://a.example/a%20b'],
    ['https:a.example', 'https://a.example'],
  ])('%s → %s', (input, expected) => {
    const out = normalizeAgentUrl(input)
    expect(out).toBe(expected)
    expect(parseAgentId(out).kind).toBe('url')
    expect(normalizeAgentUrl(out)).toBe(out)
  })

  it.each([
    ['http', 'http://a.example', /use https, also in development/],
    ['ws', 'wss://a.example', /must be https/],
    ['no scheme', 'a.example', /not an absolute URL/],
    ['userinfo', 'https://bob@a.example', /userinfo/],
    ['empty userinfo', 'https://@a.example', /userinfo/],
    ['query', 'https://a.example/?x=1', /query/],
    ['empty query', 'https://a.example/?', /query/],
    ['fragment', 'https://a.example/#top', /fragment/],
    ['path ending in //', 'https://a.example/x//', /no normal form/],
    ['root //', 'https://a.example//', /no normal form/],
  ])('refuses %s', (_name, input, message) => {
    const e = errorOf(() => normalizeAgentUrl(input))
    expect(e.code).toBe('invalid_format')
    expect(e.message).toMatch(message)
  })
})

describe('agentEndpoints', () => {
  it('builds the well-known endpoints', () => {
    expect(agentEndpoints('https://a.example/agents/bob')).toEqual({
      inbox: 'https://a.example/agents/bob/.well-known/agentmsg/inbox',
      identity: 'https://a.example/agents/bob/.well-known/agentmsg/identity',
      capabilities: 'https://a.example/agents/bob/.well-known/agentmsg/capabilities',
    })
    expect(agentEndpoints('https://a.example').inbox).toBe(
      'https://a.example/.well-known/agentmsg/inbox',
    )
  })

  it('refuses agents without a base URL and non-normal URLs', () => {
    for (const id of ['bob', W3C_DID, 'https://a.example/']) {
      expect(errorOf(() => agentEndpoints(id)).code).toBe('invalid_format')
    }
  })
})

describe('key ids', () => {
  it('splits a did:key key id at the last #', () => {
    const keyId = `${W3C_DID}#${W3C_DID.slice('did:key:'.length)}`
    expect(splitKeyId(keyId)).toEqual({ agent: W3C_DID, fragment: W3C_DID.slice(8) })
  })

  it('splits at the last # when there are several', () => {
    expect(splitKeyId('https://a.example/x#k#1')).toEqual({
      agent: 'https://a.example/x#k',
      fragment: '1',
    })
  })

  it.each([['no hash'], ['#k1'], ['https://a.example#'], ['#'], ['']])('refuses %j', (keyId) => {
    const e = errorOf(() => splitKeyId(keyId, 'security.signatures[0].key_id'))
    expect(e.code).toBe('invalid_format')
    expect(e.field).toBe('security.signatures[0].key_id')
  })

  it('names key_id by default and refuses non-strings', () => {
    expect(errorOf(() => splitKeyId(5 as unknown as string)).field).toBe('key_id')
  })

  it('formats key ids that split back', () => {
    const keyId = formatKeyId('https://a.example', 'k1')
    expect(keyId).toBe('https://a.example#k1')
    expect(splitKeyId(keyId)).toEqual({ agent: 'https://a.example', fragment: 'k1' })
    expect(errorOf(() => formatKeyId('https://a.example', 'k#1')).field).toBe('fragment')
    expect(errorOf(() => formatKeyId('https://a.example', '')).field).toBe('fragment')
    expect(errorOf(() => formatKeyId('', 'k1')).field).toBe('agent')
  })
})
