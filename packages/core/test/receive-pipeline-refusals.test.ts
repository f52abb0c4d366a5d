/** `receive` refuses, one test per PROFILE §6 step, at that step and with that code. */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { AuthLevelTracker } from '../src/auth-level.js'
import { invalidFormat } from '../src/errors.js'
import { canonicalizeToBytes } from '../src/jcs.js'
import { ed25519Signer } from '../src/keys.js'
import { PROFILE } from '../src/profile.js'
import { receive } from '../src/receive/pipeline.js'
import { ReplayGuard } from '../src/replay.js'
import type { Message } from '../src/types.js'
import { bytesOf, carol, context, DAY, run, runInput, verdict } from './receive-helpers.js'

const MAX_MESSAGE_BYTES = PROFILE.maxMessageBytes

describe('receive refuses, one test per step', () => {
  it('parse: bytes that are not strict I-JSON', async () => {
    const alice = await fixtureAgent()
    const text = JSON.stringify(await signedMessage(alice, 'bob'))
    const dup = new TextEncoder().encode(text.replace('{', '{"phase":"greeting",'))
    const result = await receive({ body: dup }, context())
    expect(verdict(result)).toBe('parse:invalid_format')
    if (result.status === 'refused') {
      expect(result.error.message).toMatch(/duplicate member name "phase"/)
      expect(result.message).toBeUndefined()
    }
  })

  it('validate: a structural problem, and the caller’s own rule', async () => {
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, 'bob')
    const { conversation_id: _c, ...missing } = m
    expect(await run(missing as Message, context())).toBe('validate:invalid_format')
    const relay = context({
      checkMessage: (msg) => {
        if ((msg.trace?.received.length ?? 0) > 0)
          throw invalidFormat('must be empty', 'trace.received')
      },
    })
    const traced = { ...m, trace: { received: [{ by: 'relay:https://r.example' }] } }
    expect(await run(traced as Message, relay)).toBe('validate:invalid_format')
    expect(await run(m, relay)).toBe('accepted')
  })

  it('addressee: another agent, or a topic not subscribed', async () => {
    const alice = await fixtureAgent()
    const ctx = context({ addressee: { agent: 'bob' } })
    expect(await run(await signedMessage(alice, 'carol'), ctx)).toBe('addressee:invalid_format')
    const topic = await signedMessage(alice, 'x', { to: { topic: 'other' } })
    expect(await run(topic, ctx)).toBe('addressee:invalid_format')
  })

  it('idempotency: an Idempotency-Key that is not the message_id', async () => {
    const m = await signedMessage(await fixtureAgent(), 'bob')
    const body = bytesOf(m)
    expect(await runInput({ body, idempotencyKey: 'other' }, context())).toBe(
      'idempotency:invalid_format',
    )
    expect(await runInput({ body, idempotencyKey: null }, context())).toBe('accepted')
  })

  it('size: JCS(message without trace) over 1 MiB, from bytes and from a JSON value', async () => {
    const alice = await fixtureAgent()
    const base = await signedMessage(alice, 'bob', { text: '', conversationId: 'c-big' })
    const pad = MAX_MESSAGE_BYTES + 1 - canonicalizeToBytes(base).byteLength
    const big = await signedMessage(alice, 'bob', {
      text: 'a'.repeat(pad),
      conversationId: 'c-big',
      messageId: base.message_id,
    })
    expect(canonicalizeToBytes(big).byteLength).toBe(MAX_MESSAGE_BYTES + 1)
    expect(await run(big, context())).toBe('size:payload_too_large')
    expect(await runInput({ body: big }, context())).toBe('size:payload_too_large')
    // The trace does not count.
    const limit = await signedMessage(alice, 'bob', {
      text: 'a'.repeat(pad - 1),
      conversationId: 'c-big',
      messageId: base.message_id,
    })
    const traced = { ...limit, trace: { received: [{ by: 'x'.repeat(1000) }] } }
    expect(await run(traced as Message, context())).toBe('accepted')
  })

  it('freshness: too old, too far ahead, expired', async () => {
    const alice = await fixtureAgent()
    const now = Date.now()
    const old = await signedMessage(
      alice,
      'bob',
      { date: now - 9 * DAY },
      { signer: alice.signer, created: now - 9 * DAY },
    )
    const ahead = await signedMessage(
      alice,
      'bob',
      { date: now + 10 * 60_000 },
      { signer: alice.signer, created: now },
    )
    const expired = await signedMessage(
      alice,
      'bob',
      { date: now - 120_000, ttlSeconds: 60 },
      { signer: alice.signer, created: now - 120_000 },
    )
    for (const m of [old, ahead, expired])
      expect(await run(m, context())).toBe('freshness:stale_message')
  })

  it('verify: tampered, forged, unknown key, and a lookup that failed for now', async () => {
    const alice = await fixtureAgent()
    const mallory = await fixtureAgent()
    const m = await signedMessage(alice, 'bob')
    const tampered = { ...m, body: { parts: [{ type: 'text' as const, text: 'pay mallory' }] } }
    const forged = await signedMessage(
      alice,
      'bob',
      {},
      { signer: ed25519Signer(mallory.keys, alice.signer.keyId) },
    )
    const result = await receive({ body: bytesOf(tampered) }, context())
    expect(verdict(result)).toBe('verify:invalid_signature')
    if (result.status === 'refused') {
      expect(result.message?.message_id).toBe(m.message_id)
      expect(result.verified).toBe(false)
    }
    expect(await run(forged, context())).toBe('verify:invalid_signature')
    const c = await carol()
    expect(await run(await signedMessage(c.strong, 'bob'), context())).toBe('verify:unknown_sender')
    const down = context({
      resolver: {
        resolve: async () => ({ status: 'unavailable', reason: 'timeout', retryAfter: 42 }),
      },
    })
    const unavailable = await receive({ body: bytesOf(m) }, down)
    expect(verdict(unavailable)).toBe('verify:unavailable')
    if (unavailable.status === 'refused') expect(unavailable.error.retryAfter).toBe(42)
  })

  it('ed25519: a relay refuses a message whose only verified signature is HMAC', async () => {
    const c = await carol()
    const greeting = await signedMessage(c.hmac, 'bob', { phase: 'greeting' })
    const relay = context({ resolver: c.resolver, requireEd25519: true })
    expect(await run(greeting, relay)).toBe('ed25519:invalid_signature')
    expect(await run(greeting, context({ resolver: c.resolver }))).toBe('accepted')
  })

  it('duplicate: an id remembered by the replay guard, or reported by the caller', async () => {
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, 'bob')
    const replay = new ReplayGuard()
    await replay.remember(alice.id, m.message_id)
    expect(await run(m, context({ replay }))).toBe('duplicate')
    const seen: string[] = []
    const relay = context({
      isDuplicate: async (msg) => {
        seen.push(msg.message_id)
        return true
      },
    })
    expect(await run(m, relay)).toBe('duplicate')
    expect(seen).toEqual([m.message_id])
  })

  it('per-sender: rate_limited with Retry-After, charged to the verified sender', async () => {
    const alice = await fixtureAgent()
    const charged: string[] = []
    const ctx = context({
      perSender: (from) => {
        charged.push(from)
        return 3
      },
    })
    const result = await receive({ body: bytesOf(await signedMessage(alice, 'bob')) }, ctx)
    expect(verdict(result)).toBe('per-sender:rate_limited')
    if (result.status === 'refused') {
      expect(result.error.retryAfter).toBe(3)
      expect(result.verified).toBe(true)
    }
    expect(charged).toEqual([alice.id])
  })

  it('level: a conversation at level 2 refuses a level-1 message', async () => {
    const c = await carol()
    const levels = new AuthLevelTracker()
    const ctx = context({ resolver: c.resolver, levels })
    const first = await receive(
      { body: bytesOf(await signedMessage(c.strong, 'bob', { conversationId: 'c-level' })) },
      ctx,
    )
    if (first.status !== 'accepted' || !first.decision) throw new Error('first not accepted')
    // Evaluated, not committed: only the caller's commit raises the conversation's level.
    expect(await levels.conversationLevel('carol', 'c-level')).toBeNull()
    await levels.commit(first.decision)
    const second = await signedMessage(c.weak, 'bob', { conversationId: 'c-level', sequence: 1 })
    const result = await receive({ body: bytesOf(second) }, ctx)
    expect(verdict(result)).toBe('level:insufficient_auth_level')
    if (result.status === 'refused') expect(result.verified).toBe(true)
  })

  it('throws what is not a refusal (a resolver that fails unexpectedly)', async () => {
    const m = await signedMessage(await fixtureAgent(), 'bob')
    const broken = context({
      resolver: {
        resolve: async () => {
          throw new Error('database down')
        },
      },
    })
    await expect(receive({ body: bytesOf(m) }, broken)).rejects.toThrow(/database down/)
  })
})
