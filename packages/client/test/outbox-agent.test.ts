/**
 * The agent's send path with its outbox, over a real HTTPS inbox on 127.0.0.1: durable is
 * decided once, before sending (a durable target among the route's); a durable send that
 * fails for now resolves pending and is reported later (`delivered` / `undeliverable`);
 * refusals and non-durable sends reject at once with nothing kept; what an earlier run left is
 * resumed at start. (Ported from the https transport's durable tests, and the replacement of
 * the router's "inbox durable only when nothing follows, then back to it" mechanism.)
 */
import {
  AgentMsgError,
  type DeliveryTarget,
  type Message,
  memoryStorage,
  type Storage,
  type TransportFactory,
} from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { openAgent } from '../src/agent/create.js'
import type { AgentOptions } from '../src/index.js'
import { collect } from './collect.js'
import {
  accept,
  cleanups,
  createManualClock,
  DAY,
  type ManualClock,
  postingFactory,
  reply,
  START,
  setupOutboxTests,
  startInbox,
  type TestInbox,
} from './outbox-helpers.js'

setupOutboxTests()

const RELAY = 'https://relay.example'
const error500 = { status: 'error', code: 'internal_error', message: 'down' }

/** A relay transport stand-in: targets from the peer's relays, confidential when all trusted. */
function fakeRelay(fail: () => Error | undefined = () => undefined) {
  const calls: Array<{ target: DeliveryTarget; message: Message }> = []
  const factory: TransportFactory = {
    protocol: 'relay',
    create: (components) => ({
      protocol: 'relay',
      targets: ({ agent, relays }) =>
        relays.length === 0
          ? []
          : [
              {
                kind: 'relay',
                agent,
                urls: relays,
                route: 'relay',
                confidential: relays.every((u) => components.trusts(u)),
                durable: false,
              },
            ],
      async send(message, target) {
        calls.push({ target, message })
        const error = fail()
        if (error) throw error
        return { messageId: message.message_id, target, url: target.urls[0]! }
      },
      close: async () => {},
    }),
  }
  return { factory, calls }
}

async function sender(o: AgentOptions & { clock?: ManualClock; random?: () => number } = {}) {
  const { clock = createManualClock(START), random = () => 0.5, ...options } = o
  const agent = await openAgent(
    {
      storage: memoryStorage(),
      transports: [postingFactory()],
      // The peer's document cannot be had: its inbox is the well-known one.
      resolveIdentity: async () => ({ status: 'not_found', reason: 'test' }),
      now: () => clock.now(),
      sendOnly: true,
      ...options,
    },
    { clock, random },
  )
  cleanups.push(() => agent.close())
  return { agent, clock }
}

const peerOf = (inbox: TestInbox) => `https://127.0.0.1:${inbox.port}`
const stored = async (storage: Storage) => (await storage.list('outbox/')).length

describe('the agent outbox', () => {
  it('a durable send that fails for now resolves pending, is retried, and reported delivered', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) =>
      n === 1
        ? reply(res, 503, { status: 'error', code: 'unavailable', message: 'busy' })
        : accept(req, res, n)
    const storage = memoryStorage()
    const { agent, clock } = await sender({ storage })
    const delivered = collect(agent, 'delivered')
    const sent = await agent.send(peerOf(inbox), 'hello')
    expect(sent).toMatchObject({
      route: 'direct',
      transport: 'https',
      sealed: false,
      pending: true,
    })
    expect(await stored(storage)).toBe(2)
    expect(clock.pending()).toBe(1)
    clock.runAll()
    expect(await delivered.nth(1)).toEqual({
      messageId: sent.messageId,
      to: peerOf(inbox),
      route: 'direct',
    })
    expect(inbox.accepted.get(sent.messageId)).toBe(1)
    expect(await stored(storage)).toBe(0)
  })

  it('a later refusal and the 24 h deadline are reported undeliverable', async () => {
    const inbox = await startInbox()
    let refuse: string | undefined
    inbox.script = (req, res) => {
      refuse ??= req.messageId
      if (req.messageId === refuse && inbox.requests.length > 1) {
        reply(res, 403, { status: 'error', code: 'forbidden', message: 'no longer' })
      } else reply(res, 500, error500)
    }
    const { agent, clock } = await sender()
    const undeliverable = collect(agent, 'undeliverable')
    const first = await agent.send(peerOf(inbox), 'refused later')
    expect(first.pending).toBe(true)
    clock.advance(clock.nextDue()! - clock.now())
    expect(await undeliverable.nth(1)).toMatchObject({
      messageId: first.messageId,
      to: peerOf(inbox),
      route: 'direct',
      code: 'forbidden',
      reason: expect.stringMatching(/403.*no longer/),
    })

    const sentAt = clock.now()
    const late = await agent.send(peerOf(inbox), 'never')
    while (undeliverable.seen.length < 2) {
      const due = clock.nextDue()
      if (due !== undefined) clock.advance(due - clock.now())
      await new Promise((r) => setTimeout(r, 2))
    }
    expect(undeliverable.seen[1]).toMatchObject({
      messageId: late.messageId,
      reason: expect.stringMatching(/deadline/),
    })
    expect(clock.now()).toBe(sentAt + DAY) // the last attempt ran at the deadline
  })

  it('rejects a 4xx at once, durable or not, with the peer code and nothing stored', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 400, { status: 'error', code: 'stale_message', message: 'old' })
    for (const durable of [true, false]) {
      const storage = memoryStorage()
      const { agent, clock } = await sender({ storage, transports: [postingFactory({ durable })] })
      await expect(agent.send(peerOf(inbox), `d=${durable}`)).rejects.toMatchObject({
        code: 'stale_message',
        status: 400,
        peerStatus: 400,
      })
      expect(await stored(storage)).toBe(0)
      expect(clock.pending()).toBe(0)
    }
    expect(inbox.requests).toHaveLength(2)
  })

  it('not durable: a 5xx is tried once and rejects with its retryable code; nothing is kept', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const storage = memoryStorage()
    const { agent, clock } = await sender({
      storage,
      transports: [postingFactory({ durable: false })],
    })
    const error = await agent.send(peerOf(inbox), 'once').catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'internal_error', status: 500, peerStatus: 500 })
    expect((error as AgentMsgError).shouldRetry()).toBe(true)
    expect(await stored(storage)).toBe(0)
    expect(clock.pending()).toBe(0)
    clock.runAll()
    expect(inbox.requests).toHaveLength(1)
  })

  it('not durable: a 429 rejects rate_limited with Retry-After; a refused connection unavailable', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(
        res,
        429,
        { status: 'error', code: 'rate_limited', message: 'slow' },
        {
          'Retry-After': '7',
        },
      )
    const storage = memoryStorage()
    const { agent } = await sender({ storage, transports: [postingFactory({ durable: false })] })
    await expect(agent.send(peerOf(inbox), 'one')).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      retryAfter: 7,
    })
    const to = peerOf(inbox)
    await inbox.close()
    const error = await agent.send(to, 'two').catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'unavailable', status: 503 })
    expect((error as Error).message).toMatch(/network error/)
    expect(await stored(storage)).toBe(0)
  })

  it('resumes at start what an earlier run left, and reports it', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const storage = memoryStorage()
    const clock = createManualClock(START)
    const first = await sender({ storage, clock })
    const m1 = await first.agent.send(peerOf(inbox), 'one')
    expect(m1.pending).toBe(true)
    await first.agent.close()
    expect(clock.pending()).toBe(0)

    inbox.script = accept
    clock.advance(60_000)
    const second = await sender({ storage, clock })
    expect(second.agent.id).toBe(first.agent.id)
    const delivered = collect(second.agent, 'delivered')
    clock.advance(0)
    expect(await delivered.nth(1)).toMatchObject({ messageId: m1.messageId, route: 'direct' })
    expect(await stored(storage)).toBe(0)
    expect(inbox.accepted.get(m1.messageId)).toBe(1)
  })

  it('refuses a message over 1 MiB, or an invalid one, without a request or an outbox entry', async () => {
    const inbox = await startInbox()
    const storage = memoryStorage()
    const { agent } = await sender({ storage })
    await expect(agent.send(peerOf(inbox), 'x'.repeat(1_048_576))).rejects.toMatchObject({
      code: 'payload_too_large',
      status: 413,
    })
    await expect(
      agent.send(peerOf(inbox), 'x', { conversationId: 'has spaces' }),
    ).rejects.toMatchObject({ code: 'invalid_format' })
    expect(inbox.requests).toHaveLength(0)
    expect(await stored(storage)).toBe(0)
  })
})

describe('durable is decided once, before sending', () => {
  it('a durable target among the route: stored once, every round tries all targets in order', async () => {
    // Replaces "an inbox is tried durable only when nothing follows; after every relay refused,
    // back to it durable": the router no longer sends twice to decide.
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 503, { status: 'error', code: 'unavailable', message: 'busy' })
    let relayDown = true
    const relay = fakeRelay(() =>
      relayDown ? new AgentMsgError('unavailable', 'relay down') : undefined,
    )
    const storage = memoryStorage()
    const { agent, clock } = await sender({
      storage,
      transports: [postingFactory(), relay.factory],
      // The peer's key is unknown (no document): an untrusted relay would be left out (PROFILE §8).
      relayTrust: { [RELAY]: 'trusted' },
    })
    const delivered = collect(agent, 'delivered')
    const sent = await agent.send(peerOf(inbox), 'two', { relays: [RELAY] })
    expect(sent).toMatchObject({ route: 'direct', transport: 'https', pending: true })
    expect(inbox.requests).toHaveLength(1)
    expect(relay.calls).toHaveLength(1)
    expect(relay.calls[0]!.target).toMatchObject({ urls: [RELAY], confidential: true })
    expect(await stored(storage)).toBe(2)

    clock.advance(clock.nextDue()! - clock.now())
    await expect.poll(() => relay.calls.length).toBe(2)
    expect(inbox.requests).toHaveLength(2) // the inbox first again, then the relay
    relayDown = false
    clock.advance(clock.nextDue()! - clock.now())
    expect(await delivered.nth(1)).toEqual({
      messageId: sent.messageId,
      to: peerOf(inbox),
      route: 'relay',
      relayUrl: RELAY,
    })
    expect(inbox.requests).toHaveLength(3)
    expect(await stored(storage)).toBe(0)
  })

  it('no durable target: tried once, rejected with the last failure, nothing stored', async () => {
    const relay = fakeRelay(() => new AgentMsgError('unavailable', 'relay down'))
    const storage = memoryStorage()
    const inbox = await startInbox()
    const { agent, clock } = await sender({
      storage,
      transports: [postingFactory(), relay.factory],
      relayTrust: { [RELAY]: 'trusted' },
    })
    await expect(
      agent.send(peerOf(inbox), 'relays only', { relays: [RELAY], route: 'relay' }),
    ).rejects.toMatchObject({ code: 'unavailable', message: 'relay down' })
    expect(relay.calls).toHaveLength(1)
    expect(inbox.requests).toHaveLength(0)
    expect(await stored(storage)).toBe(0)
    expect(clock.pending()).toBe(0)

    // route: 'direct' never reaches the relays.
    inbox.script = (_req, res) => reply(res, 500, error500)
    expect(
      await agent.send(peerOf(inbox), 'direct', { relays: [RELAY], route: 'direct' }),
    ).toMatchObject({ pending: true })
    expect(relay.calls).toHaveLength(1)
  })
})
