/** Relay agent auth over WebSocket (PROFILE §9): the challenge, the auth frame and its checks. */
import { describe, expect, it } from 'vitest'
import { base64urlDecode, base64urlEncode } from '../src/base64url.js'
import { utf8Decode } from '../src/bytes.js'
import { getDefaultCryptoProvider } from '../src/crypto/default.node.js'
import { signWsAuth, wsAuthPayload } from '../src/http-signature/sign.js'
import { createChallenge, type VerifyWsAuthInput, verifyWsAuth } from '../src/http-signature/ws.js'
import { createIdentityDocument, revokeKey } from '../src/identity/create.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import type { KeyResolver } from '../src/resolver.js'
import { alice, bob, BASE as RELAY, rejects, resolver } from './http-signature-fixtures.js'

const provider = getDefaultCryptoProvider()

describe('wsAuthPayload and createChallenge', () => {
  it('is the three lines joined by LF, no trailing LF', () => {
    const nonce = 'abc_-XYZ'
    expect(utf8Decode(wsAuthPayload(RELAY, nonce))).toBe(
      'agentmsg-ws-auth\nhttps://relay.example\nabc_-XYZ',
    )
  })

  it('issues base64url nonces of 32 random bytes', () => {
    const a = createChallenge()
    const b = createChallenge()
    expect(a.type).toBe('challenge')
    expect(Object.keys(a).sort()).toEqual(['nonce', 'type'])
    expect(a.nonce).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(base64urlDecode(a.nonce)).toHaveLength(32)
    expect(a.nonce).not.toBe(b.nonce)
  })
})

describe('signWsAuth / verifyWsAuth', () => {
  const verify = (frame: unknown, over: Partial<VerifyWsAuthInput> = {}) =>
    verifyWsAuth({ frame, relayBaseUrl: RELAY, nonce: NONCE, resolver, ...over })
  const NONCE = 'q3pD8m0Yh2m3xk8TqkM1bWbqvUe3pYcE9hQm4cH2F1s'
  /** Alice's answer to the challenge NONCE of RELAY. */
  const aliceFrame = (after?: string) =>
    signWsAuth({
      relayBaseUrl: RELAY,
      nonce: NONCE,
      signer: alice.signer,
      agent: alice.id,
      ...(after !== undefined ? { after } : {}),
    })

  it('round trips, with and without after, as an object or as text', async () => {
    const frame = await aliceFrame()
    expect(frame).toEqual({
      type: 'auth',
      agent: alice.id,
      key_id: alice.signer.keyId,
      sig: frame.sig,
    })
    expect(frame.sig).toMatch(/^[A-Za-z0-9_-]{86}$/)
    // The signature is over exactly the payload.
    expect(
      await provider.ed25519Verify(
        alice.keys.publicKey,
        wsAuthPayload(RELAY, NONCE),
        base64urlDecode(frame.sig),
      ),
    ).toBe(true)
    expect(await verify(frame)).toEqual({
      agent: alice.id,
      keyId: alice.signer.keyId,
      source: 'did-key',
      level: 3,
    })
    expect(await verify(JSON.stringify(frame))).toMatchObject({ agent: alice.id })

    const resumed = await aliceFrame('c-42')
    expect(resumed.after).toBe('c-42')
    expect(await verify(resumed)).toMatchObject({ agent: alice.id, after: 'c-42' })
  })

  it('tampering → invalid_signature', async () => {
    const frame = await aliceFrame()
    await verify(frame) // control
    // Another challenge nonce or another relay.
    await rejects(verify(frame, { nonce: `${NONCE.slice(0, -1)}t` }), 'invalid_signature')
    await rejects(verify(frame, { relayBaseUrl: 'https://other.example' }), 'invalid_signature')
    await rejects(verify(frame, { relayBaseUrl: `${RELAY}/` }), 'invalid_signature')
    // The signature itself.
    const sig = base64urlDecode(frame.sig)
    sig[0]! ^= 1
    await rejects(verify({ ...frame, sig: base64urlEncode(sig) }), 'invalid_signature')
    await rejects(verify({ ...frame, sig: `${frame.sig}A` }), 'invalid_signature')
    await rejects(verify({ ...frame, sig: frame.sig.slice(0, 84) }), 'invalid_signature')
    await rejects(verify({ ...frame, sig: `${frame.sig}==` }), 'invalid_signature')
    // key_id of another agent than the frame's agent.
    await rejects(verify({ ...frame, agent: bob.id }), 'invalid_signature')
    await rejects(verify({ ...frame, key_id: bob.signer.keyId }), 'invalid_signature')
    // Bob's own key and agent, but Alice's signature.
    await rejects(
      verify({ ...frame, agent: bob.id, key_id: bob.signer.keyId }),
      'invalid_signature',
    )
    // Malformed key ids.
    await rejects(verify({ ...frame, key_id: alice.id }), 'invalid_signature')
    await rejects(verify({ ...frame, key_id: `${alice.id}#` }), 'invalid_signature')
    await rejects(verify({ ...frame, key_id: `${alice.id}#other` }), 'invalid_signature')
  })

  it('malformed frames → invalid_format', async () => {
    const frame = await aliceFrame()
    const { sig: _sig, ...noSig } = frame
    for (const bad of [
      null,
      42,
      [frame],
      'not json',
      '{"type":"auth","type":"auth"}',
      { ...frame, type: 'ack' },
      noSig,
      { ...frame, agent: 7 },
      { ...frame, agent: 'https://Alice.example' },
      { ...frame, key_id: null },
      { ...frame, sig: 1 },
      { ...frame, after: 5 },
      { ...frame, extra: true },
    ]) {
      await rejects(verify(bad), 'invalid_format')
    }
  })

  it('resolution: unknown key, unavailable lookup, revoked document key', async () => {
    const simple = 'alice'
    const keys = await generateKeyPair()
    const signer = ed25519Signer(keys, `${simple}#k1`)
    const frame = await signWsAuth({ relayBaseUrl: RELAY, nonce: NONCE, signer, agent: simple })
    await rejects(verify(frame), 'unknown_sender')

    const down: KeyResolver = {
      resolve: async () => ({ status: 'unavailable', reason: 'timeout', retryAfter: 30 }),
    }
    const e = await rejects(verify(frame, { resolver: down }), 'unavailable')
    expect(e.retryAfter).toBe(30)

    const urlAgent = 'https://alice.example'
    const urlSigner = ed25519Signer(keys, `${urlAgent}#k1`)
    const doc = createIdentityDocument({
      agentId: urlAgent,
      publicKey: keys.publicKey,
      keyId: 'k1',
    })
    const fromDoc = (document: typeof doc): KeyResolver => ({
      resolve: async () => ({
        status: 'found',
        key: { alg: 'ed25519', publicKey: keys.publicKey, source: 'identity-document', document },
      }),
    })
    const urlFrame = await signWsAuth({
      relayBaseUrl: RELAY,
      nonce: NONCE,
      signer: urlSigner,
      agent: urlAgent,
    })
    expect(await verify(urlFrame, { resolver: fromDoc(doc) })).toMatchObject({
      agent: urlAgent,
      level: 2,
    })
    await rejects(verify(urlFrame, { resolver: fromDoc(revokeKey(doc, 'k1')) }), 'key_revoked')
  })

  it("a key_id of another agent than the frame's agent → invalid_signature, even if it verifies", async () => {
    const keys = await generateKeyPair()
    const keyHolder: KeyResolver = {
      resolve: async () => ({
        status: 'found',
        key: { alg: 'ed25519', publicKey: keys.publicKey, source: 'pinned' },
      }),
    }
    const signer = ed25519Signer(keys, 'https://alice.example#k1')
    const frame = await signWsAuth({
      relayBaseUrl: RELAY,
      nonce: NONCE,
      signer,
      agent: 'https://alice.example',
    })
    expect(await verify(frame, { resolver: keyHolder })).toMatchObject({
      agent: 'https://alice.example',
      level: 2,
    })
    await rejects(
      verify({ ...frame, agent: 'https://bob.example' }, { resolver: keyHolder }),
      'invalid_signature',
    )
  })

  it('signWsAuth refuses a signer of another agent', async () => {
    await expect(
      signWsAuth({ relayBaseUrl: RELAY, nonce: NONCE, signer: bob.signer, agent: alice.id }),
    ).rejects.toMatchObject({ code: 'invalid_format' })
  })
})
