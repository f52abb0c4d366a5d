/** `receive` runs its steps in PROFILE §6's order, whatever else is wrong with a message. */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { AuthLevelTracker } from '../src/auth-level.js'
import { ed25519Signer } from '../src/keys.js'
import { receive } from '../src/receive/pipeline.js'
import { ReplayGuard } from '../src/replay.js'
import type { Message } from '../src/types.js'
import { bytesOf, carol, context, DAY, run, runInput } from './receive-helpers.js'

describe('receive runs the steps in PROFILE §6 order', () => {
  it('malformed and badly signed is refused at validation (400), not verification', async () => {
    const m = await signedMessage(await fixtureAgent(), 'bob')
    const { security: _s, conversation_id: _c, ...bad } = m
    expect(await run(bad as Message, context())).toBe('validate:invalid_format')
  })

  it('addressee before Idempotency-Key before size before freshness before verify', async () => {
    const alice = await fixtureAgent()
    const mallory = await fixtureAgent()
    const now = Date.now()
    const bad = await signedMessage(
      alice,
      'carol',
      { date: now - 9 * DAY },
      { signer: ed25519Signer(mallory.keys, alice.signer.keyId), created: now - 9 * DAY },
    )
    const ctx = context({ addressee: { agent: 'bob' } })
    const body = bytesOf(bad)
    expect(await runInput({ body, idempotencyKey: 'x' }, ctx)).toBe('addressee:invalid_format')
    expect(await runInput({ body, idempotencyKey: 'x' }, context())).toBe(
      'idempotency:invalid_format',
    )
    expect(await runInput({ body }, context())).toBe('freshness:stale_message')
    const fresh = await signedMessage(
      alice,
      'bob',
      {},
      { signer: ed25519Signer(mallory.keys, alice.signer.keyId) },
    )
    expect(await run(fresh, context())).toBe('verify:invalid_signature')
  })

  it('forgeries never reach the per-sender limit or the duplicate check', async () => {
    const alice = await fixtureAgent()
    const mallory = await fixtureAgent()
    const calls: string[] = []
    const ctx = context({
      isDuplicate: async () => {
        calls.push('duplicate')
        return false
      },
      perSender: () => {
        calls.push('per-sender')
        return 0
      },
    })
    const forged = await signedMessage(
      alice,
      'bob',
      {},
      { signer: ed25519Signer(mallory.keys, alice.signer.keyId) },
    )
    expect(await run(forged, ctx)).toBe('verify:invalid_signature')
    expect(calls).toEqual([])
    expect(await run(await signedMessage(alice, 'bob'), ctx)).toBe('accepted')
    expect(calls).toEqual(['duplicate', 'per-sender'])
  })

  it('a duplicate is answered before the per-sender limit is charged', async () => {
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, 'bob')
    const replay = new ReplayGuard()
    await replay.remember(alice.id, m.message_id)
    let charged = 0
    const ctx = context({
      replay,
      perSender: () => {
        charged++
        return 60
      },
    })
    expect(await run(m, ctx)).toBe('duplicate')
    expect(charged).toBe(0)
    expect(await run(await signedMessage(alice, 'bob'), ctx)).toBe('per-sender:rate_limited')
    expect(charged).toBe(1)
  })

  it('per-sender before the level check', async () => {
    const c = await carol()
    const levels = new AuthLevelTracker()
    const first = await receive(
      { body: bytesOf(await signedMessage(c.strong, 'bob', { conversationId: 'c-o' })) },
      context({ resolver: c.resolver, levels }),
    )
    if (first.status !== 'accepted' || !first.decision) throw new Error('first not accepted')
    await levels.commit(first.decision)
    const weak = await signedMessage(c.weak, 'bob', { conversationId: 'c-o', sequence: 1 })
    const limited = context({ resolver: c.resolver, levels, perSender: () => 9 })
    expect(await run(weak, limited)).toBe('per-sender:rate_limited')
  })
})
