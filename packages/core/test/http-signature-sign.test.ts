/** Relay agent auth (PROFILE §9): the signer's exact output and round trips through the verifier. */
import { describe, expect, it } from 'vitest'
import { utf8Encode } from '../src/bytes.js'
import { getDefaultCryptoProvider } from '../src/crypto/default.node.js'
import { didKeyFragment } from '../src/did-key.js'
import { NonceMemory } from '../src/http-signature/nonces.js'
import { contentDigest, signRequest } from '../src/http-signature/sign.js'
import { verifyRequest } from '../src/http-signature/verify.js'
import { ed25519Signer, keyPairFromSeed, type Signer } from '../src/keys.js'
import {
  alice,
  BASE,
  bob,
  enc,
  messagesUrl,
  NONCE,
  rejects,
  resolver,
  T,
  verifyInput,
} from './http-signature-fixtures.js'

const provider = getDefaultCryptoProvider()

describe('contentDigest', () => {
  it('is the RFC 9530 sha-256 value', async () => {
    expect(await contentDigest(utf8Encode('{"hello": "world"}'))).toBe(
      'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
    )
    expect(await contentDigest(new Uint8Array())).toBe(
      'sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:',
    )
  })
})

describe('signRequest header values', () => {
  it('writes Signature-Input exactly (no body)', async () => {
    const keys = await keyPairFromSeed(new Uint8Array(32).fill(7))
    const signer = ed25519Signer(keys, 'https://alice.example#k1')
    const h = await signRequest({
      method: 'GET',
      url: 'https://relay.example/relay/messages?agent=https%3A%2F%2Falice.example',
      signer,
      created: 1700000000,
      nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
    })
    expect(Object.keys(h).sort()).toEqual(['Signature', 'Signature-Input'])
    expect(h['Signature-Input']).toBe(
      'sig1=("@method" "@target-uri");created=1700000000;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="https://alice.example#k1";alg="ed25519"',
    )
    expect(h['Signature']).toMatch(/^sig1=:[A-Za-z0-9+/]{86}==:$/)
  })

  it('writes Signature-Input and Content-Digest exactly (with body)', async () => {
    const keys = await keyPairFromSeed(new Uint8Array(32).fill(7))
    const signer = ed25519Signer(keys, 'https://alice.example#k1')
    const h = await signRequest({
      method: 'post',
      url: 'https://relay.example/relay/subscribe',
      body: utf8Encode('{"hello": "world"}'),
      signer,
      created: 1700000000,
      nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
    })
    expect(h['Content-Digest']).toBe('sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:')
    expect(h['Signature-Input']).toBe(
      'sig1=("@method" "@target-uri" "content-digest");created=1700000000;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="https://alice.example#k1";alg="ed25519"',
    )
  })

  it('signs exactly the RFC 9421 signature base (hand-written)', async () => {
    const keys = await keyPairFromSeed(new Uint8Array(32).fill(7))
    const signer = ed25519Signer(keys, 'https://alice.example#k1')
    const h = await signRequest({
      method: 'POST',
      url: 'https://relay.example/relay/subscribe',
      body: utf8Encode('{"hello": "world"}'),
      signer,
      created: 1700000000,
      nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
    })
    const base = [
      '"@method": POST',
      '"@target-uri": https://relay.example/relay/subscribe',
      '"content-digest": sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
      '"@signature-params": ("@method" "@target-uri" "content-digest");created=1700000000;nonce="AAAAAAAAAAAAAAAAAAAAAA";keyid="https://alice.example#k1";alg="ed25519"',
    ].join('\n')
    const sigB64 = h['Signature']!.slice('sig1=:'.length, -1)
    const sig = Uint8Array.from(atob(sigB64), (c) => c.charCodeAt(0))
    expect(await provider.ed25519Verify(keys.publicKey, utf8Encode(base), sig)).toBe(true)
    // And not with a trailing LF.
    expect(await provider.ed25519Verify(keys.publicKey, utf8Encode(`${base}\n`), sig)).toBe(false)
  })

  it('generates a fresh base64url nonce and current created by default', async () => {
    const a = await signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: alice.signer })
    const b = await signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: alice.signer })
    const nonceOf = (h: Record<string, string>) =>
      /;nonce="([^"]+)"/.exec(h['Signature-Input']!)![1]!
    expect(nonceOf(a)).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(nonceOf(a)).not.toBe(nonceOf(b))
    const created = Number(/;created=(\d+);/.exec(a['Signature-Input']!)![1])
    expect(Math.abs(created * 1000 - Date.now())).toBeLessThan(10_000)
  })

  it('refuses URLs not in serialised form, bad nonces and non-ed25519 signers', async () => {
    const s = alice.signer
    await rejects(
      signRequest({ method: 'GET', url: 'https://relay.example:443/relay/messages', signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: 'https://relay.example', signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: '/relay/messages', signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: `${BASE}/relay/messages#x`, signer: s }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: s, nonce: 'short' }),
      'invalid_format',
    )
    await rejects(
      signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: s, created: 1.5 }),
      'invalid_format',
    )
    const hmac: Signer = { alg: 'hmac-sha256', keyId: s.keyId, sign: s.sign }
    await rejects(
      signRequest({ method: 'GET', url: messagesUrl(alice.id), signer: hmac }),
      'invalid_format',
    )
  })
})

describe('verifyRequest round trips', () => {
  it('GET without body, did:key resolved by createKeyResolver()', async () => {
    const url = messagesUrl(alice.id)
    const headers = await signRequest({
      method: 'GET',
      url,
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    expect(headers['Content-Digest']).toBeUndefined()
    expect(headers['Signature-Input']).not.toContain('content-digest')
    const r = await verifyRequest(verifyInput({ headers, expectedAgent: alice.id }))
    expect(r).toEqual({ agent: alice.id, keyId: alice.signer.keyId, source: 'did-key', level: 3 })
    expect(alice.signer.keyId).toBe(`${alice.id}#${didKeyFragment(alice.id)}`)
  })

  it('POST with body, using a Headers object', async () => {
    const url = `${BASE}/relay/subscribe`
    const body = utf8Encode(JSON.stringify({ subscribe: { agent: alice.id } }))
    const h = await signRequest({
      method: 'POST',
      url,
      body,
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    expect(h['Content-Digest']).toBe(await contentDigest(body))
    const r = await verifyRequest(
      verifyInput({
        method: 'POST',
        targetUri: url,
        headers: new Headers(h),
        body,
        expectedAgent: alice.id,
      }),
    )
    expect(r.agent).toBe(alice.id)
  })

  it('DELETE, lower-case header names, default clock', async () => {
    const url = `${BASE}/relay/messages/01JD3V8Q6X5K2M9N4P7R0S1T2U?agent=${enc(alice.id)}&from=${enc(bob.id)}`
    const h = await signRequest({ method: 'delete', url, signer: alice.signer })
    const lower = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]))
    const r = await verifyRequest({
      method: 'DELETE',
      targetUri: url,
      headers: lower,
      resolver,
      nonces: new NonceMemory(),
    })
    expect(r.keyId).toBe(alice.signer.keyId)
  })

  it('an empty body counts as no body', async () => {
    const url = `${BASE}/relay/subscribe`
    const h = await signRequest({
      method: 'POST',
      url,
      body: new Uint8Array(),
      signer: alice.signer,
      created: T,
      nonce: NONCE,
    })
    expect(h['Content-Digest']).toBeUndefined()
    await verifyRequest(
      verifyInput({ method: 'POST', targetUri: url, headers: h, body: new Uint8Array() }),
    )
  })
})
