/**
 * httpsTransport as a core Transport over a real HTTPS inbox on 127.0.0.1: the receipt on 202,
 * the first-failure rule (durable → pending and reported later; not durable → cancelled and
 * rejected with a retryable code), 4xx at once, and deliveries of an earlier run resumed.
 */
import {
  createKeyResolver,
  type DeliveryEvent,
  ed25519Signer,
  generateKeyPair,
  isAgentMsgError,
  type JsonValue,
  memoryStorage,
  type Storage,
  type TransportComponents,
} from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { createManualClock, type ManualClock } from '../src/clock.js'
import { DeliveryError } from '../src/delivery-error.js'
import { type HttpsTransport, httpsTransport } from '../src/https-transport.js'
import { Outbox } from '../src/outbox.js'
import {
  accept,
  agentId,
  cleanups,
  DAY,
  inboxTarget,
  message,
  reply,
  START,
  setupSenderTests,
  startInbox,
  testFetch,
  urlTarget,
} from './sender-helpers.js'

setupSenderTests()

interface Harness {
  transport: HttpsTransport
  clock: ManualClock
  storage: Storage
  outcomes: DeliveryEvent[]
  errors: unknown[]
}

async function components(storage: Storage, clock: ManualClock) {
  const outcomes: DeliveryEvent[] = []
  const errors: unknown[] = []
  const keys = await generateKeyPair()
  const c: TransportComponents = {
    agentId: agentId(),
    signer: ed25519Signer(keys),
    resolver: createKeyResolver(),
    storage,
    relays: [],
    identityDocument: () => undefined,
    now: () => clock.now(),
    onError: (e) => void errors.push(e),
    onOutcome: (e) => void outcomes.push(e),
  }
  return { c, outcomes, errors }
}

async function harness(
  o: { storage?: Storage; clock?: ManualClock; random?: () => number } = {},
): Promise<Harness> {
  const clock = o.clock ?? createManualClock(START)
  const storage = o.storage ?? memoryStorage()
  const { c, outcomes, errors } = await components(storage, clock)
  const factory = httpsTransport({ fetch: testFetch(), clock, random: o.random ?? (() => 0.5) })
  const transport = await factory.create(c)
  cleanups.push(() => transport.close())
  return { transport, clock, storage, outcomes, errors }
}

const error500 = { status: 'error', code: 'internal_error', message: 'down' }

describe('httpsTransport', () => {
  it('is a TransportFactory for inbox targets, without listen in the isomorphic entry', async () => {
    const factory = httpsTransport()
    expect(factory.protocol).toBe('https')
    const { transport } = await harness()
    expect(transport.protocol).toBe('https')
    expect(transport.kinds).toEqual(['inbox'])
    expect('listen' in transport).toBe(false)
  })

  it('resolves with the receipt on 202 and leaves nothing in the outbox', async () => {
    const inbox = await startInbox()
    const { transport, outcomes } = await harness()
    const msg = await message()
    const receipt = await transport.send(msg, inboxTarget(inbox))
    expect(receipt).toEqual({
      messageId: msg.message_id,
      target: inboxTarget(inbox),
      url: inbox.url,
    })
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
    expect(await transport.pending()).toEqual([])
    expect(outcomes).toEqual([]) // the caller had the outcome
  })

  it('not durable: a 5xx first attempt cancels the delivery and rejects with a retryable code', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const { transport, clock, outcomes } = await harness()
    const msg = await message()
    const error = await transport.send(msg, inboxTarget(inbox)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DeliveryError)
    expect(error).toMatchObject({
      outcome: 'retryable',
      code: 'internal_error',
      status: 500,
      peerStatus: 500,
      messageId: msg.message_id,
      attempts: 1,
    })
    expect((error as DeliveryError).shouldRetry()).toBe(true)
    expect(await transport.pending()).toEqual([])
    expect(clock.pending()).toBe(0)
    clock.runAll()
    expect(inbox.requests).toHaveLength(1)
    expect(outcomes).toEqual([])
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
    const { transport } = await harness()
    await expect(transport.send(await message(), inboxTarget(inbox))).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      retryAfter: 7,
    })
    const port = inbox.port
    await inbox.close()
    const dead = urlTarget(`https://127.0.0.1:${port}/.well-known/agentmsg/inbox`)
    const error = await transport.send(await message('two'), dead).catch((e: unknown) => e)
    expect(error).toMatchObject({ outcome: 'retryable', code: 'unavailable', status: 503 })
    expect((error as Error).message).toMatch(/network error/)
    expect(await transport.pending()).toEqual([])
  })

  it('durable: a 503 first attempt resolves pending, retries, and reports delivered', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) =>
      n === 1
        ? reply(res, 503, { status: 'error', code: 'unavailable', message: 'busy' })
        : accept(req, res, n)
    const { transport, clock, outcomes } = await harness()
    const msg = await message()
    const receipt = await transport.send(msg, inboxTarget(inbox), { durable: true })
    expect(receipt).toEqual({
      messageId: msg.message_id,
      target: inboxTarget(inbox),
      url: inbox.url,
      pending: true,
    })
    const [stored] = await transport.pending()
    expect(stored).toMatchObject({ attempts: 1, lastError: 'status 503', firstAttempt: START })
    expect(clock.pending()).toBe(1)
    clock.runAll()
    await expect.poll(() => outcomes.length).toBe(1)
    expect(outcomes[0]).toEqual({
      type: 'delivered',
      messageId: msg.message_id,
      target: inboxTarget(inbox),
    })
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
    expect(await transport.pending()).toEqual([])
  })

  it('durable: a later refusal and the 24 h deadline are reported undeliverable', async () => {
    const inbox = await startInbox()
    const refused = await message('refused later')
    inbox.script = (req, res) =>
      req.messageId === refused.message_id && inbox.requests.length > 1
        ? reply(res, 403, { status: 'error', code: 'forbidden', message: 'no longer' })
        : reply(res, 500, error500)
    const { transport, clock, outcomes } = await harness()
    expect(await transport.send(refused, inboxTarget(inbox), { durable: true })).toMatchObject({
      pending: true,
    })
    clock.advance(clock.nextDue()! - clock.now())
    await expect.poll(() => outcomes.length).toBe(1)
    expect(outcomes[0]).toMatchObject({
      type: 'undeliverable',
      messageId: refused.message_id,
      code: 'forbidden',
      reason: expect.stringMatching(/403.*no longer/),
    })

    const late = await message('never')
    const sentAt = clock.now()
    await transport.send(late, inboxTarget(inbox), { durable: true })
    while (outcomes.length < 2) {
      const due = clock.nextDue()
      if (due !== undefined) clock.advance(due - clock.now())
      await new Promise((r) => setTimeout(r, 5))
    }
    expect(outcomes[1]).toMatchObject({
      type: 'undeliverable',
      messageId: late.message_id,
      reason: expect.stringMatching(/deadline/),
    })
    expect(clock.now()).toBe(sentAt + DAY) // the last attempt ran at the deadline
  })

  it('rejects a 4xx at once, durable or not, with the peer code and nothing stored', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 400, { status: 'error', code: 'stale_message', message: 'old' })
    const { transport, clock } = await harness()
    for (const durable of [false, true]) {
      const error = await transport
        .send(await message(`d=${durable}`), inboxTarget(inbox), { durable })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ outcome: 'failed', code: 'stale_message', status: 400 })
    }
    expect(await transport.pending()).toEqual([])
    expect(clock.pending()).toBe(0)
    // Nothing the inbox would refuse goes out at all: a relay target, an http: URL.
    const msg = await message()
    const relay = { kind: 'relay', agent: agentId(), urls: ['https://relay.example'] }
    await expect(transport.send(msg, relay)).rejects.toMatchObject({ code: 'invalid_format' })
    await expect(transport.send(msg, urlTarget('http://127.0.0.1:1/inbox'))).rejects.toThrow(
      /https/,
    )
    expect(inbox.requests).toHaveLength(2)
  })

  it('an abort during the first attempt cancels the delivery', async () => {
    const inbox = await startInbox()
    inbox.script = () => {} // never answers
    const { transport } = await harness()
    const controller = new AbortController()
    const sent = transport.send(await message(), inboxTarget(inbox), {
      durable: true,
      signal: controller.signal,
    })
    await expect.poll(() => inbox.requests.length).toBe(1)
    controller.abort(new Error('gave up'))
    await expect(sent).rejects.toThrow('gave up')
    await expect.poll(() => transport.pending()).toEqual([])
  })

  it('resumes deliveries left by an earlier run (also old {kind, url} records) and reports them', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const storage = memoryStorage()
    const clock = createManualClock(START)
    const first = await harness({ storage, clock })
    const m1 = await message('one')
    await first.transport.send(m1, inboxTarget(inbox), { durable: true })
    await first.transport.close()
    // A record in the previous version's shape.
    const m2 = await message('two')
    const id = Outbox.entryId(m2.message_id, inboxTarget(inbox))
    await storage.put(`outbox/${id}/m`, {
      id,
      message: m2 as unknown as JsonValue,
      target: { kind: 'inbox', url: inbox.url },
      firstAttempt: START,
    })
    await storage.put(`outbox/${id}/s`, { attempts: 1, nextAttempt: START, lastError: 'x' })

    inbox.script = accept
    clock.advance(60_000)
    const second = await harness({ storage, clock })
    await expect.poll(() => second.outcomes.length).toBe(2)
    expect(second.outcomes.map((o) => [o.type, o.messageId]).sort()).toEqual(
      [
        ['delivered', m1.message_id],
        ['delivered', m2.message_id],
      ].sort(),
    )
    expect(second.outcomes.find((o) => o.messageId === m2.message_id)!.target).toEqual(
      inboxTarget(inbox),
    )
    expect(await second.transport.pending()).toEqual([])
    expect(second.errors.filter((e) => !isAgentMsgError(e))).toEqual([])
  })
})
