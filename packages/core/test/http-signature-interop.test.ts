/**
 * Relay agent auth against an independent RFC 9421 implementation (`http-message-signatures`,
 * with Node's own Ed25519): its requests, with its own parameter order, verify with ours, and
 * ours verify with its verifier (PROFILE §9).
 */
import { createHash, createPublicKey } from 'node:crypto'
import { createVerifier, httpbis } from 'http-message-signatures'
import { describe, expect, it } from 'vitest'
import {
  stockSignedHeaders,
  stockSignerAgent,
} from '../../conformance/test/support/stock-rfc9421.js'
import { utf8Encode } from '../src/bytes.js'
import { NonceMemory } from '../src/http-signature/nonces.js'
import { signRequest } from '../src/http-signature/sign.js'
import { verifyRequest } from '../src/http-signature/verify.js'
import { alice, BASE, enc, rejects, resolver } from './http-signature-fixtures.js'

const subscribeBody = (agent: string) => utf8Encode(JSON.stringify({ subscribe: { agent } }))

describe('a request signed by http-message-signatures', () => {
  it('verifies with verifyRequest, in the library parameter order (no body)', async () => {
    const bob = stockSignerAgent()
    const url = `${BASE}/relay/messages?agent=${enc(bob.id)}`
    const headers = await stockSignedHeaders(bob, 'GET', url)
    expect(headers['Signature-Input']).toMatch(/^sig1=\("@method" "@target-uri"\);keyid="/)
    const r = await verifyRequest({
      method: 'GET',
      targetUri: url,
      headers,
      resolver,
      nonces: new NonceMemory(),
      expectedAgent: bob.id,
    })
    expect(r).toEqual({ agent: bob.id, keyId: bob.keyId, source: 'did-key', level: 3 })
  })

  it('verifies with a body and Content-Digest; tampering is still refused', async () => {
    const bob = stockSignerAgent()
    const url = `${BASE}/relay/subscribe`
    const body = subscribeBody(bob.id)
    const headers = await stockSignedHeaders(bob, 'POST', url, body)
    const input = { method: 'POST', targetUri: url, headers, body, resolver }
    await verifyRequest({ ...input, nonces: new NonceMemory() })
    await rejects(
      verifyRequest({ ...input, body: subscribeBody(alice.id), nonces: new NonceMemory() }),
      'invalid_signature',
    )
    await rejects(
      verifyRequest({ ...input, targetUri: `${url}?x=1`, nonces: new NonceMemory() }),
      'invalid_signature',
    )
  })

  it('verifies when re-spelled with optional spaces', async () => {
    const bob = stockSignerAgent()
    const url = `${BASE}/relay/messages?agent=${enc(bob.id)}`
    const headers = await stockSignedHeaders(bob, 'GET', url)
    const spaced = headers['Signature-Input']!.replace('(', '(  ').replaceAll(';', '; ')
    expect(spaced).not.toBe(headers['Signature-Input'])
    await verifyRequest({
      method: 'GET',
      targetUri: url,
      headers: { ...headers, 'Signature-Input': ` ${spaced} ` },
      resolver,
      nonces: new NonceMemory(),
    })
  })
})

describe('a request signed by signRequest', () => {
  const libraryVerify = (method: string, url: string, headers: Record<string, string>) => {
    const publicKey = createPublicKey({
      key: {
        kty: 'OKP',
        crv: 'Ed25519',
        x: Buffer.from(alice.keys.publicKey).toString('base64url'),
      },
      format: 'jwk',
    })
    return httpbis.verifyMessage(
      {
        keyLookup: async (params) =>
          params.keyid === alice.signer.keyId
            ? {
                id: alice.signer.keyId,
                algs: ['ed25519'],
                verify: createVerifier(publicKey, 'ed25519'),
              }
            : null,
        requiredParams: ['created', 'nonce', 'keyid', 'alg'],
        requiredFields: ['@method', '@target-uri'],
        tolerance: 300,
      },
      { method, url, headers },
    )
  }

  it('verifies with the library (no body)', async () => {
    const url = `${BASE}/relay/messages?agent=${enc(alice.id)}&limit=10`
    const headers = await signRequest({ method: 'GET', url, signer: alice.signer })
    expect(await libraryVerify('GET', url, headers)).toBe(true)
    expect(await libraryVerify('GET', `${url}1`, headers)).toBe(false)
    expect(await libraryVerify('DELETE', url, headers)).toBe(false)
  })

  it('verifies with the library (with body), and the digest is the body’s', async () => {
    const url = `${BASE}/relay/subscribe`
    const body = subscribeBody(alice.id)
    const headers = await signRequest({ method: 'POST', url, body, signer: alice.signer })
    expect(headers['Content-Digest']).toBe(
      `sha-256=:${createHash('sha256').update(body).digest('base64')}:`,
    )
    expect(await libraryVerify('POST', url, headers)).toBe(true)
    const otherDigest = `sha-256=:${createHash('sha256').update('x').digest('base64')}:`
    expect(await libraryVerify('POST', url, { ...headers, 'Content-Digest': otherDigest })).toBe(
      false,
    )
  })
})
