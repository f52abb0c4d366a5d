/**
 * `receive` accepts: bytes and JSON values, topics, unknown versions, and a relay context without
 * levels (PROFILE §6, real Ed25519 and HMAC signatures, memory state).
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { createMessage } from '../src/create-message.js'
import { receive } from '../src/receive/pipeline.js'
import { signMessage } from '../src/sign.js'
import { bytesOf, carol, context, run, runInput, verdict } from './receive-helpers.js'

describe('receive accepts', () => {
  it('bytes: parsed strictly, verified, with level, source and a level decision', async () => {
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const m = await signedMessage(alice, bob.id)
    const result = await receive(
      { body: bytesOf(m), idempotencyKey: m.message_id },
      context({ addressee: { agent: bob.id } }),
    )
    expect(result.status).toBe('accepted')
    if (result.status !== 'accepted') return
    expect(result.message).toEqual(m)
    expect(result.level).toBe(3)
    expect(result.source).toBe('did-key')
    expect(result.verified.keyId).toBe(alice.signer.keyId)
    expect(result.decision).toMatchObject({ from: alice.id, level: 3, previousLevel: null })
    expect(result.protocolError).toBeUndefined()
  })

  it('a JSON value from an envelope, validated as it is', async () => {
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, 'bob')
    expect(await runInput({ body: structuredClone(m) }, context())).toBe('accepted')
  })

  it('a subscribed topic, and any addressee when none is set (a relay)', async () => {
    const alice = await fixtureAgent()
    const topic = await signedMessage(alice, 'x', { to: { topic: 'news/agents' } })
    const ctx = context({ addressee: { agent: 'bob', topics: new Set(['news/agents']) } })
    expect(await run(topic, ctx)).toBe('accepted')
    expect(await run(await signedMessage(alice, 'anyone'), context())).toBe('accepted')
  })

  it('a version it does not speak: verified, then accepted with protocolError and no level', async () => {
    const alice = await fixtureAgent()
    const unsigned = {
      ...createMessage({
        from: alice.id,
        to: 'bob',
        conversationId: 'c-v2',
        sequence: 0,
        phase: 'request',
        text: 'hi',
      }),
      version: '2',
    }
    const resigned = await signMessage(unsigned, alice.signer)
    const result = await receive({ body: bytesOf(resigned) }, context())
    expect(result.status).toBe('accepted')
    if (result.status !== 'accepted') return
    expect(result.protocolError?.code).toBe('version_mismatch')
    expect(result.decision).toBeUndefined()
  })

  it('at a relay: no level step without levels, and an HMAC greeting with an Ed25519 signature', async () => {
    const c = await carol()
    const ctx = context({ resolver: c.resolver, requireEd25519: true })
    delete ctx.levels
    const m = await signedMessage(
      c.strong,
      'bob',
      { phase: 'greeting' },
      { signer: [c.strong.signer, c.hmac.signer] },
    )
    const result = await receive({ body: bytesOf(m) }, ctx)
    expect(verdict(result)).toBe('accepted')
    if (result.status === 'accepted') expect(result.decision).toBeUndefined()
  })
})
