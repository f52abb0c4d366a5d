import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
/**
 * `createReceiver`: persist before `accepted`, a bounded queue to the application, duplicates
 * processed once, restore after a crash, and the error phase messages of PROFILE §7 (real
 * signatures, memory storage reused across "restarts").
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createMessage } from '../src/create-message.js'
import { createIdentityDocument } from '../src/identity/create.js'
import type { DeliveryOutcome } from '../src/interfaces/transport.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import { createReceiver } from '../src/receive/receiver.js'
import type {
  ErrorReplyTarget,
  ReceivedInfo,
  Receiver,
  ReceiverOptions,
} from '../src/receive/types.js'
import { didKeyResolver } from '../src/resolver.js'
import { signMessage } from '../src/sign.js'
import { memoryStorage } from '../src/storage/memory.js'
import type { Message, UnsignedMessage } from '../src/types.js'
import { bytesOf, carol, deferred, until } from './receive-helpers.js'

const BOB = 'https://bob.example'
const open: Receiver[] = []

afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close({ drain: false })))
})

/** A receiver for BOB recording what its application and error replies saw. */
function start(options: Partial<ReceiverOptions> = {}) {
  const received: Array<{ message: Message; info: ReceivedInfo }> = []
  const replies: Array<{ message: UnsignedMessage; to: ErrorReplyTarget }> = []
  const errors: unknown[] = []
  const receiver = createReceiver({
    agentId: BOB,
    resolver: didKeyResolver(),
    onMessage: async (message, info) => {
      received.push({ message, info })
    },
    onError: (e) => errors.push(e),
    errorReplies: {
      send: async (message, to) => {
        replies.push({ message, to })
      },
    },
    ...options,
  })
  open.push(receiver)
  const deliver = (message: unknown, transport = 'https', extra = {}) =>
    receiver.receive({ body: bytesOf(message), transport, ...extra })
  return { receiver, received, replies, errors, deliver }
}

function status(outcome: DeliveryOutcome): string {
  return outcome.status === 'refused'
    ? `refused:${outcome.error.code}:${outcome.retry ? 'retry' : 'final'}`
    : outcome.status
}

describe('createReceiver', () => {
  it('accepts, then hands the message to the application with its level and transport', async () => {
    const gate = deferred()
    const seen: ReceivedInfo[] = []
    const { receiver, deliver } = start({
      onMessage: async (_m, info) => {
        seen.push(info)
        await gate.promise
      },
    })
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, BOB)
    expect(await deliver(m, 'relay')).toEqual({ status: 'accepted', messageId: m.message_id })
    await until(() => seen.length === 1)
    expect(seen[0]).toEqual({
      level: 3,
      source: 'did-key',
      keyId: alice.signer.keyId,
      knownContact: false,
      transport: 'relay',
      sealed: false,
    })
    expect(receiver.pending).toBe(1)
    gate.resolve()
    await until(() => receiver.pending === 0)
  })

  it('accepts a JSON value from an envelope', async () => {
    const { received, receiver } = start()
    const m = await signedMessage(await fixtureAgent(), BOB)
    expect((await receiver.receive({ body: m, transport: 'relay' })).status).toBe('accepted')
    await until(() => received.length === 1)
  })

  it('answers a duplicate without processing it again, before and after processing', async () => {
    const { receiver, received, deliver } = start()
    const m = await signedMessage(await fixtureAgent(), BOB)
    expect(status(await deliver(m))).toBe('accepted')
    expect(status(await deliver(m))).toBe('duplicate')
    await until(() => received.length === 1 && receiver.pending === 0)
    expect(status(await deliver(m, 'relay'))).toBe('duplicate')
    expect(received).toHaveLength(1)
  })

  it('of two copies racing through the pipeline, one is processed', async () => {
    const { receiver, received, deliver } = start()
    const m = await signedMessage(await fixtureAgent(), BOB)
    const outcomes = await Promise.all([deliver(m), deliver(m), deliver(m)])
    expect(outcomes.map(status).filter((s) => s === 'accepted')).toHaveLength(1)
    await until(() => receiver.pending === 0)
    expect(received).toHaveLength(1)
  })

  it('persists an accepted message before answering and deletes it once processed', async () => {
    const storage = memoryStorage()
    const gate = deferred()
    const { receiver, deliver } = start({ storage, onMessage: () => gate.promise })
    const m = await signedMessage(await fixtureAgent(), BOB)
    expect(status(await deliver(m))).toBe('accepted')
    const stored = await storage.list('inbox/pending/')
    expect(stored).toHaveLength(1)
    expect((stored[0]![1] as { message: Message }).message.message_id).toBe(m.message_id)
    gate.resolve()
    await until(() => receiver.pending === 0)
    expect(await storage.list('inbox/pending/')).toHaveLength(0)
  })

  it('processes after a crash what was accepted and not processed, once', async () => {
    const storage = memoryStorage()
    const first = start({ storage, onMessage: () => new Promise(() => undefined) })
    const alice = await fixtureAgent()
    const a = await signedMessage(alice, BOB)
    const b = await signedMessage(alice, BOB)
    expect(status(await first.deliver(a, 'relay'))).toBe('accepted')
    expect(status(await first.deliver(b))).toBe('accepted')
    await first.receiver.close({ drain: false }) // the "crash": the application never finished
    const second = start({ storage })
    await second.receiver.ready
    await until(() => second.received.length === 2 && second.receiver.pending === 0)
    expect(second.received.map((r) => [r.message.message_id, r.info.transport])).toEqual([
      [a.message_id, 'relay'],
      [b.message_id, 'https'],
    ])
    expect(second.received[0]!.info.level).toBe(3)
    // A sender retrying after a lost 202 finds a duplicate, not a second delivery.
    expect(status(await second.deliver(a))).toBe('duplicate')
    expect(await storage.list('inbox/pending/')).toHaveLength(0)
  })

  it('refuses with retry when the queue is full, and accepts the retry once it drained', async () => {
    const gate = deferred()
    const { receiver, received, deliver } = start({
      maxQueue: 1,
      queueRetryAfter: 7,
      onMessage: async (m) => {
        await gate.promise
        received.push({ message: m, info: undefined as never })
      },
    })
    const alice = await fixtureAgent()
    const first = await signedMessage(alice, BOB)
    const second = await signedMessage(alice, BOB)
    expect(status(await deliver(first))).toBe('accepted')
    const full = await deliver(second)
    expect(status(full)).toBe('refused:unavailable:retry')
    if (full.status === 'refused') expect(full.error.retryAfter).toBe(7)
    gate.resolve()
    await until(() => receiver.pending === 0)
    // Not remembered as seen: the retry is accepted and processed.
    expect(status(await deliver(second))).toBe('accepted')
    await until(() => received.length === 2)
  })

  it('charges the per-sender limit of the delivery, with retry', async () => {
    const { deliver } = start()
    const alice = await fixtureAgent()
    const perSender = () => 4
    const limited = await deliver(await signedMessage(alice, BOB), 'https', { perSender })
    expect(status(limited)).toBe('refused:rate_limited:retry')
    if (limited.status === 'refused') expect(limited.error.retryAfter).toBe(4)
  })

  it('refuses bad input for good: wrong addressee, Idempotency-Key, bad signature', async () => {
    const { deliver, received } = start({ topics: ['news'] })
    const alice = await fixtureAgent()
    const mallory = await fixtureAgent()
    expect(status(await deliver(await signedMessage(alice, 'https://carol.example')))).toBe(
      'refused:invalid_format:final',
    )
    const m = await signedMessage(alice, BOB)
    expect(status(await deliver(m, 'https', { idempotencyKey: 'nope' }))).toBe(
      'refused:invalid_format:final',
    )
    const forged = await signedMessage(
      alice,
      BOB,
      {},
      { signer: ed25519Signer(mallory.keys, alice.signer.keyId) },
    )
    expect(status(await deliver(forged))).toBe('refused:invalid_signature:final')
    expect(status(await deliver(await signedMessage(alice, 'x', { to: { topic: 'news' } })))).toBe(
      'accepted',
    )
    await until(() => received.length === 1)
  })

  it('refuses a lower level in a conversation and answers with an error phase message', async () => {
    const c = await carol()
    const { deliver, replies, received } = start({ resolver: c.resolver })
    const first = await signedMessage(c.strong, BOB, { conversationId: 'c-lvl' })
    expect(status(await deliver(first))).toBe('accepted')
    const second = await signedMessage(c.weak, BOB, { conversationId: 'c-lvl', sequence: 1 })
    expect(status(await deliver(second))).toBe('refused:insufficient_auth_level:final')
    await until(() => replies.length === 1)
    const part = (replies[0]!.message as Message).body.parts[0] as unknown as {
      data: Record<string, unknown>
    }
    expect(part.data).toMatchObject({
      code: 'insufficient_auth_level',
      ref_message_id: second.message_id,
    })
    await until(() => received.length === 1)
  })

  it('answers a version it does not speak with an error phase message, never processing it', async () => {
    const { deliver, replies, received } = start()
    const alice = await fixtureAgent()
    const unsigned = {
      ...createMessage({
        from: alice.id,
        to: BOB,
        conversationId: 'c-v',
        sequence: 0,
        phase: 'request',
        text: 'x',
      }),
      version: '2',
    }
    const m = await signMessage(unsigned, alice.signer)
    expect(status(await deliver(m))).toBe('accepted')
    expect(status(await deliver(m))).toBe('duplicate')
    await until(() => replies.length === 1)
    expect(
      ((replies[0]!.message as Message).body.parts[0] as unknown as { data: { code: string } }).data
        .code,
    ).toBe('version_mismatch')
    await new Promise((r) => setTimeout(r, 20))
    expect(received).toHaveLength(0)
    expect(replies).toHaveLength(1)
  })

  it('answers an unknown key of a URL agent at the inbox of its own identity document', async () => {
    const keys = await generateKeyPair()
    const agent = 'https://dave.example'
    const doc = createIdentityDocument({ agentId: agent, publicKey: keys.publicKey, keyId: 'k1' })
    const { deliver, replies } = start({ identityOf: async (a) => (a === agent ? doc : undefined) })
    const dave = { id: agent, signer: ed25519Signer(keys, `${agent}#k1`) }
    const m = await signedMessage(dave, BOB, { relays: ['https://relay.example'] })
    expect(status(await deliver(m))).toBe('refused:unknown_sender:final')
    await until(() => replies.length === 1)
    // Unverified: never to relays named in the message.
    expect(replies[0]!.to).toEqual({ agent, inbox: doc.endpoints.inbox })
    // A did:key sender that failed verification is not answered.
    const alice = await fixtureAgent()
    const mallory = await fixtureAgent()
    const forged = await signedMessage(
      alice,
      BOB,
      {},
      { signer: ed25519Signer(mallory.keys, alice.signer.keyId) },
    )
    expect(status(await deliver(forged))).toBe('refused:invalid_signature:final')
    await new Promise((r) => setTimeout(r, 20))
    expect(replies).toHaveLength(1)
  })

  it('refuses with retry once closed, and drains what it accepted', async () => {
    const gate = deferred()
    let done = 0
    const { receiver, deliver } = start({
      onMessage: async () => {
        await gate.promise
        done++
      },
    })
    const alice = await fixtureAgent()
    expect(status(await deliver(await signedMessage(alice, BOB)))).toBe('accepted')
    const closed = receiver.close()
    expect(status(await deliver(await signedMessage(alice, BOB)))).toBe('refused:unavailable:retry')
    gate.resolve()
    await closed
    expect(done).toBe(1)
  })

  it('once stopped (drain: false), a later close does not wait for the stuck application', async () => {
    const { receiver, deliver } = start({ onMessage: () => new Promise(() => undefined) })
    expect(status(await deliver(await signedMessage(await fixtureAgent(), BOB)))).toBe('accepted')
    await until(() => receiver.pending === 1)
    await receiver.close({ drain: false })
    await receiver.close()
    expect(status(await deliver(await signedMessage(await fixtureAgent(), BOB)))).toBe(
      'refused:unavailable:retry',
    )
  })

  it('throws what is not a refusal, so the transport answers 500', async () => {
    const { receiver } = start({
      resolver: {
        resolve: async () => {
          throw new Error('database down')
        },
      },
    })
    const m = await signedMessage(await fixtureAgent(), BOB)
    await expect(receiver.receive({ body: bytesOf(m), transport: 'https' })).rejects.toThrow(
      /database down/,
    )
  })
})
