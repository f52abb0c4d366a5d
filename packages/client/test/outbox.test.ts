/**
 * The agent's outbox over a real HTTPS inbox on 127.0.0.1: stored before the first attempt,
 * PROFILE §6's schedule (full-jitter backoff, Retry-After honoured and never shortened, 24 h
 * deadline), refusals never retried, resume after a restart, one round per entry at a time.
 * (Ported from the https transport's sender tests: the retrying moved into the agent.)
 */
import type { ServerResponse } from 'node:http'
import { type Message, memoryStorage, type Storage, type StorageOp } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { describe, expect, it } from 'vitest'
import { Outbox, type OutboxEntry, type Outcome } from '../src/agent/outbox.js'
import { deliverEntry } from '../src/agent/route.js'
import {
  accept,
  cleanups,
  createManualClock,
  DAY,
  inboxTarget,
  type ManualClock,
  message,
  postingTransport,
  reply,
  START,
  setupOutboxTests,
  startInbox,
  testFetch,
  urlTarget,
} from './outbox-helpers.js'

setupOutboxTests()

function newOutbox(
  o: {
    storage?: Storage
    clock?: ManualClock
    random?: () => number
    transport?: ReturnType<typeof postingTransport>
    system?: boolean
  } = {},
) {
  const clock = o.clock ?? createManualClock(START)
  const storage = o.storage ?? memoryStorage()
  const transport = o.transport ?? postingTransport()
  const outcomes: Array<Outcome & { entry: OutboxEntry }> = []
  const outbox = new Outbox({
    storage,
    ...(o.system ? {} : { clock }),
    random: o.random ?? (() => 0.5),
    deliver: (entry, signal) => deliverEntry([transport], entry, signal),
    onOutcome: (entry, outcome) => void outcomes.push({ ...outcome, entry }),
  })
  cleanups.push(() => outbox.close())
  return { outbox, clock, storage, outcomes }
}

function entry(msg: Message, target = urlTarget('https://127.0.0.1:1/inbox'), now = START) {
  return {
    id: msg.message_id,
    targets: [{ target, protocol: 'https', copy: 0 }],
    copies: [msg],
    firstAttempt: now,
    attempts: 0,
    nextAttempt: now,
  } satisfies OutboxEntry
}

const error500 = { status: 'error', code: 'internal_error', message: 'down' }

describe('outbox over real HTTPS', () => {
  it('delivers on 202 at the first attempt and keeps nothing', async () => {
    const inbox = await startInbox()
    const { outbox, outcomes } = newOutbox()
    const msg = await message()
    const round = await outbox.send(entry(msg, inboxTarget(inbox)))
    expect(round).toMatchObject({
      ok: true,
      transport: 'https',
      receipt: { messageId: msg.message_id, target: inboxTarget(inbox), url: inbox.url },
    })
    expect(inbox.requests).toHaveLength(1)
    expect(JSON.parse(inbox.requests[0]!.body)).toEqual(msg)
    expect(await outbox.list()).toEqual([])
    expect(outcomes).toEqual([]) // the caller had the outcome
  })

  it('retries a 5xx after a full-jitter delay, then delivers', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) =>
      n === 1
        ? reply(res, 500, { status: 'error', code: 'internal_error', message: 'x' })
        : accept(req, res, n)
    const { outbox, clock, outcomes } = newOutbox({ random: Math.random })
    const msg = await message()
    expect(await outbox.send(entry(msg, inboxTarget(inbox)))).toEqual({ pending: true })
    const [stored] = await outbox.list()
    const delayMs = stored!.nextAttempt - START
    expect(delayMs).toBeGreaterThanOrEqual(0)
    expect(delayMs).toBeLessThan(1000) // full jitter: [0, 1 s) before the first retry
    expect(stored).toMatchObject({ attempts: 1, lastError: expect.stringMatching(/500/) })
    expect(inbox.requests).toHaveLength(1)

    clock.advance(delayMs)
    await expect.poll(() => outcomes.length).toBe(1)
    expect(outcomes[0]).toMatchObject({ type: 'delivered', entry: { id: msg.message_id } })
    expect(inbox.requests).toHaveLength(2)
    expect(await outbox.list()).toEqual([])
  })

  it('retries when the connection is dropped mid-request', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) => (n === 1 ? res.socket?.destroy() : accept(req, res, n))
    const { outbox, clock, outcomes } = newOutbox({ random: () => 0 })
    await outbox.send(entry(await message(), inboxTarget(inbox)))
    const [stored] = await outbox.list()
    expect(stored!.lastError).toMatch(/network error/)
    clock.advance(stored!.nextAttempt - clock.now())
    await expect.poll(() => outcomes.length).toBe(1)
    expect(inbox.requests).toHaveLength(2)
  })

  it('retries a refused connection until the inbox is listening', async () => {
    const probe = await startInbox()
    const port = probe.port
    await probe.close()
    const { outbox, clock, outcomes } = newOutbox()
    const target = urlTarget(`https://127.0.0.1:${port}/.well-known/agentmsg/inbox`)
    await outbox.send(entry(await message(), target))
    const [stored] = await outbox.list()
    expect(stored!.lastError).toMatch(/network error.*ECONNREFUSED/)

    const inbox = await startInbox(port)
    clock.advance(stored!.nextAttempt - clock.now())
    await expect.poll(() => outcomes.length).toBe(1)
    expect(outcomes[0]).toMatchObject({ type: 'delivered', round: { receipt: { target } } })
    expect(inbox.requests).toHaveLength(1)
  })

  it('gives up at once on a 4xx: one request, the peer code, nothing kept', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 400, { status: 'error', code: 'stale_message', message: 'date is 9 days old' })
    const { outbox, clock } = newOutbox()
    const round = await outbox.send(entry(await message(), inboxTarget(inbox)))
    expect(round).toMatchObject({ ok: false, retry: false })
    const error = (round as { error: Error }).error
    expect(error).toMatchObject({
      code: 'stale_message',
      status: 400,
      peerStatus: 400,
      peerCode: 'stale_message',
    })
    expect(error.message).toMatch(/date is 9 days old/)
    expect(clock.pending()).toBe(0)
    clock.advance(2 * DAY)
    expect(inbox.requests).toHaveLength(1)
    expect(await outbox.list()).toEqual([])
  })

  it('keeps an unknown peer code verbatim and maps the status to a profile code', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 409, { status: 'error', code: 'conflict_thing', message: 'no' })
    const { outbox } = newOutbox()
    const round = await outbox.send(entry(await message(), inboxTarget(inbox)))
    expect((round as { error: unknown }).error).toMatchObject({
      code: 'invalid_format',
      peerStatus: 409,
      peerCode: 'conflict_thing',
    })
  })

  it('does not follow redirects', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 308, undefined, { Location: 'https://127.0.0.1:1/elsewhere' })
    const { outbox } = newOutbox()
    const round = await outbox.send(entry(await message(), inboxTarget(inbox)))
    expect(round).toMatchObject({ ok: false, error: { peerStatus: 308, code: 'not_found' } })
    expect(inbox.requests).toHaveLength(1)
  })

  it('waits at least Retry-After (seconds) after a 429', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) =>
      n === 1
        ? reply(
            res,
            429,
            { status: 'error', code: 'rate_limited', message: 'slow down' },
            {
              'Retry-After': '7',
            },
          )
        : accept(req, res, n)
    const { outbox, clock, outcomes } = newOutbox({ random: () => 0 })
    await outbox.send(entry(await message(), inboxTarget(inbox)))
    expect((await outbox.list())[0]).toMatchObject({ nextAttempt: START + 7000 })

    clock.advance(6999)
    // The timer has not fired, so no request can have been started.
    expect(clock.pending()).toBe(1)
    expect(inbox.requests).toHaveLength(1)
    clock.advance(1)
    expect(clock.pending()).toBe(0)
    await expect.poll(() => outcomes.length).toBe(1)
    expect(inbox.requests).toHaveLength(2)
  })

  it('a 429 without Retry-After is not retried (no permission given)', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 429, { status: 'error', code: 'rate_limited', message: 'slow down' })
    const { outbox, clock } = newOutbox()
    const round = await outbox.send(entry(await message(), inboxTarget(inbox)))
    expect(round).toMatchObject({ ok: false, retry: false, error: { code: 'rate_limited' } })
    expect(clock.pending()).toBe(0)
    expect(await outbox.list()).toEqual([])
  })

  it('waits at least Retry-After (HTTP-date) after a 503', async () => {
    const inbox = await startInbox()
    // The transport reads the date against the real clock: 12 whole seconds from now.
    const until = new Date(Math.ceil(Date.now() / 1000) * 1000 + 12_000).toUTCString()
    inbox.script = (req, res, n) =>
      n === 1
        ? reply(
            res,
            503,
            { status: 'error', code: 'unavailable', message: 'busy' },
            {
              'Retry-After': until,
            },
          )
        : accept(req, res, n)
    const { outbox, clock, outcomes } = newOutbox({ random: () => 0 })
    await outbox.send(entry(await message(), inboxTarget(inbox)))
    const delayMs = (await outbox.list())[0]!.nextAttempt - START
    expect(delayMs).toBeGreaterThanOrEqual(12_000)
    expect(delayMs).toBeLessThanOrEqual(13_000)
    clock.advance(delayMs - 1)
    expect(inbox.requests).toHaveLength(1)
    expect(clock.pending()).toBe(1)
    clock.advance(1)
    await expect.poll(() => outcomes.length).toBe(1)
    expect(inbox.requests).toHaveLength(2)
  })

  it('reports undeliverable 24 h after the first attempt', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const { outbox, clock, outcomes } = newOutbox({ random: () => 0.999 })
    const msg = await message()
    expect(await outbox.send(entry(msg, inboxTarget(inbox)))).toEqual({ pending: true })
    let retries = 0
    while (outcomes.length === 0) {
      const due = clock.nextDue()
      if (due === undefined) {
        await new Promise((r) => setTimeout(r, 2))
        continue
      }
      const [stored] = await outbox.list()
      retries++
      expect(stored!.attempts).toBe(retries)
      expect(stored!.nextAttempt).toBeLessThanOrEqual(START + DAY)
      clock.advance(due - clock.now())
    }
    const u = outcomes[0]!
    expect(u.type).toBe('undeliverable')
    expect(u.entry.id).toBe(msg.message_id)
    expect(u.entry.firstAttempt).toBe(START)
    expect(retries).toBeGreaterThan(1)
    expect(inbox.requests).toHaveLength(retries + 1)
    if (u.type !== 'undeliverable') throw new Error('not undeliverable')
    expect(u.reason).toMatch(/deadline/)
    expect(u.reason).toMatch(/500 internal_error/)
    expect(clock.now()).toBe(START + DAY) // the last attempt ran at the deadline
    expect(await outbox.list()).toEqual([])
    expect(clock.pending()).toBe(0)
  })

  it('counts an attempt timeout as a retryable failure', async () => {
    const inbox = await startInbox()
    const held: ServerResponse[] = []
    inbox.script = (req, res, n) => (n === 1 ? held.push(res) : accept(req, res, n))
    cleanups.push(() => held.forEach((res) => res.destroy()))
    const { outbox, clock, outcomes } = newOutbox({
      transport: postingTransport({ timeoutMs: 200 }),
    })
    await outbox.send(entry(await message(), inboxTarget(inbox)))
    const [stored] = await outbox.list()
    expect(stored!.lastError).toMatch(/no answer within 200 ms/)
    clock.advance(stored!.nextAttempt - clock.now())
    await expect.poll(() => outcomes.length).toBe(1)
    expect(inbox.requests).toHaveLength(2)
  })

  it('fails at once when the address policy refuses the inbox address', async () => {
    const inbox = await startInbox()
    const fetch = testFetch(createAddressPolicy({ allow: [] }))
    const { outbox } = newOutbox({ transport: postingTransport({ fetch }) })
    const round = await outbox.send(entry(await message(), inboxTarget(inbox)))
    expect(round).toMatchObject({ ok: false, retry: false })
    const error = (round as { error: Error }).error
    expect(error).toMatchObject({ code: 'forbidden', peerStatus: undefined })
    expect(error.message).toMatch(/127\.0\.0\.1/)
    expect(inbox.requests).toHaveLength(0)
    expect(await outbox.list()).toEqual([])
  })
})

describe('outbox resume, concurrency, cancel and close over real HTTPS', () => {
  it('a new outbox on the same storage resumes pending deliveries, delivering each once', async () => {
    const inbox = await startInbox()
    let healthy = false
    inbox.script = (req, res, n) => (healthy ? accept(req, res, n) : reply(res, 500))
    const storage = memoryStorage()
    const clock = createManualClock(START)
    const a = newOutbox({ storage, clock })
    const msg = await message()
    expect(await a.outbox.send(entry(msg, inboxTarget(inbox)))).toEqual({ pending: true })
    a.outbox.close()
    expect(clock.pending()).toBe(0) // A's timer is gone
    const [stored] = await a.outbox.list()
    expect(stored).toMatchObject({ attempts: 1, firstAttempt: START })

    healthy = true
    const b = newOutbox({ storage, clock })
    expect(await b.outbox.resume()).toBe(1)
    expect(clock.pending()).toBe(1)
    clock.advance(stored!.nextAttempt - clock.now())
    await expect.poll(() => b.outcomes.length).toBe(1)
    expect(b.outcomes[0]).toMatchObject({ type: 'delivered', entry: { id: msg.message_id } })
    expect(await b.outbox.list()).toEqual([])
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
    expect(inbox.requests).toHaveLength(2)
    // A later resume finds nothing, and nothing else is sent.
    expect(await b.outbox.resume()).toBe(0)
    clock.runAll()
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
  })

  it('resumes a due entry at once, and one past the deadline as undeliverable', async () => {
    const inbox = await startInbox()
    const storage = memoryStorage()
    const clock = createManualClock(START)
    const a = newOutbox({ storage, clock })
    inbox.script = (_req, res) => reply(res, 500)
    const m1 = await message('one')
    await a.outbox.send(entry(m1, inboxTarget(inbox)))
    a.outbox.close()

    inbox.script = accept
    clock.advance(10_000) // m1 is now due
    const b = newOutbox({ storage, clock })
    expect(await b.outbox.resume()).toBe(1)
    clock.advance(0)
    await expect.poll(() => b.outcomes.length).toBe(1)
    expect(b.outcomes[0]).toMatchObject({ type: 'delivered', entry: { id: m1.message_id } })

    // A second message left pending past its deadline while no outbox ran.
    inbox.script = (_req, res) => reply(res, 500)
    const c = newOutbox({ storage, clock })
    const m2 = await message('two')
    await c.outbox.send(entry(m2, inboxTarget(inbox), clock.now()))
    c.outbox.close()
    clock.advance(DAY + 1)
    const d = newOutbox({ storage, clock })
    await d.outbox.resume()
    clock.advance(0)
    await expect.poll(() => d.outcomes.length).toBe(1)
    expect(d.outcomes[0]).toMatchObject({
      type: 'undeliverable',
      entry: { id: m2.message_id },
      reason: expect.stringMatching(/deadline/),
    })
    expect(await d.outbox.list()).toEqual([])
    expect(inbox.accepted.get(m2.message_id)).toBeUndefined()
  })

  it('attempts different messages in parallel', async () => {
    const inbox = await startInbox()
    const waiting: Array<() => void> = []
    inbox.script = (req, res, n) => {
      waiting.push(() => accept(req, res, n))
      // Answer only once both requests are in: proves they were in flight together.
      if (waiting.length === 2) waiting.forEach((go) => go())
    }
    const { outbox } = newOutbox()
    const [m1, m2] = await Promise.all([message('one'), message('two')])
    await Promise.all([
      outbox.send(entry(m1, inboxTarget(inbox))),
      outbox.send(entry(m2, inboxTarget(inbox))),
    ])
    expect(inbox.requests).toHaveLength(2)
  })

  it('never attempts one message twice at once: a repeated send joins the round in flight', async () => {
    const inbox = await startInbox()
    const { outbox } = newOutbox()
    const msg = await message()
    const [r1, r2] = await Promise.all([
      outbox.send(entry(msg, inboxTarget(inbox))),
      outbox.send(entry(msg, inboxTarget(inbox))),
    ])
    expect(r1).toEqual(r2)
    expect(inbox.requests).toHaveLength(1)
  })

  it('an abort during the first attempt cancels the delivery', async () => {
    const inbox = await startInbox()
    inbox.script = () => {} // never answers
    const { outbox, clock } = newOutbox()
    const controller = new AbortController()
    const sent = outbox.send(entry(await message(), inboxTarget(inbox)), controller.signal)
    await expect.poll(() => inbox.requests.length).toBe(1)
    controller.abort(new Error('user gave up'))
    await expect(sent).rejects.toThrow('user gave up')
    expect(await outbox.list()).toEqual([])
    expect(clock.pending()).toBe(0)
    clock.runAll()
    expect(inbox.requests).toHaveLength(1)
  })

  it('refuses to send after close', async () => {
    const { outbox } = newOutbox()
    outbox.close()
    await expect(outbox.send(entry(await message()))).rejects.toThrow(/closed/)
  })

  it('works with the real clock and timers', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) => (n === 1 ? reply(res, 503) : accept(req, res, n))
    // random 0: the first retry is due at once, so no waiting in real time.
    const { outbox, outcomes } = newOutbox({ random: () => 0, system: true })
    expect(await outbox.send(entry(await message(), inboxTarget(inbox)))).toEqual({
      pending: true,
    })
    await expect.poll(() => outcomes.length).toBe(1)
    expect(outcomes[0]!.type).toBe('delivered')
    expect(inbox.requests).toHaveLength(2)
  })
})

/** A storage that records every batch, to check which writes are atomic. */
function recording(inner: Storage = memoryStorage()): Storage & { batches: StorageOp[][] } {
  const batches: StorageOp[][] = []
  return {
    name: 'recording',
    batches,
    get: (k) => inner.get(k),
    put: (k, v) => inner.put(k, v),
    delete: (k) => inner.delete(k),
    batch: (ops) => {
      batches.push(ops)
      return inner.batch(ops)
    },
    list: (p, o) => inner.list(p, o),
  }
}

describe('outbox storage', () => {
  it('stores an entry with its copies before the first attempt, and lists it with its state', async () => {
    const inbox = await startInbox()
    let seen: unknown
    const storage = memoryStorage()
    inbox.script = (_req, res) => {
      void storage.list('outbox/').then((rows) => {
        seen = rows.length
        reply(res, 500, error500)
      })
    }
    const { outbox } = newOutbox({ storage })
    const a = entry(await message('a'), inboxTarget(inbox))
    const b = entry(await message('b'), inboxTarget(inbox))
    await outbox.send(a)
    expect(seen).toBe(2) // message and state, written before the request
    await outbox.send(b)
    const listed = await outbox.list()
    expect(listed.map((e) => e.id).sort()).toEqual([a.id, b.id].sort())
    expect(listed.find((e) => e.id === a.id)).toEqual({
      ...a,
      attempts: 1,
      nextAttempt: expect.any(Number),
      lastError: expect.stringMatching(/500/),
    })
  })

  it('writes the message once and the state separately; add and remove are atomic batches', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) => (n === 1 ? reply(res, 500, error500) : accept(req, res, n))
    const storage = recording()
    const { outbox, clock, outcomes } = newOutbox({ storage })
    const a = entry(await message(), inboxTarget(inbox))
    const key = `outbox/${encodeURIComponent(a.id)}`
    await outbox.send(a)
    expect(storage.batches).toHaveLength(1)
    expect(storage.batches[0]!.map((op) => [op.type, op.key])).toEqual([
      ['put', `${key}/m`],
      ['put', `${key}/s`],
    ])
    expect(await storage.get(`${key}/s`)).toEqual({
      attempts: 1,
      nextAttempt: expect.any(Number),
      lastError: expect.stringMatching(/500/),
    })
    clock.runAll()
    await expect.poll(() => outcomes.length).toBe(1)
    expect(storage.batches[1]!.map((op) => op.type)).toEqual(['delete', 'delete'])
    expect(await storage.list('outbox/')).toEqual([])
  })

  it('keeps values plain JSON (no undefined members)', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const { outbox } = newOutbox()
    // memoryStorage refuses undefined members: this would throw if one were stored.
    const target = { ...inboxTarget(inbox), preference: undefined }
    expect(await outbox.send(entry(await message(), target))).toEqual({ pending: true })
  })

  it('only lists its own prefix and skips records it cannot read', async () => {
    const storage = memoryStorage()
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const { outbox } = newOutbox({ storage })
    const a = entry(await message(), inboxTarget(inbox))
    await outbox.send(a)
    await storage.put('outboxes/other/m', { id: 'x' })
    await storage.put('outbox/broken/m', { id: 'broken', copies: 'nope' })
    await storage.put('outbox/orphan/s', { attempts: 1, nextAttempt: 0 })
    const b = entry(await message('b'))
    const bad = {
      ...b,
      targets: [{ ...b.targets[0]!, target: { ...b.targets[0]!.target, urls: [42] } }],
    }
    await storage.put(`outbox/${b.id}/m`, JSON.parse(JSON.stringify(bad)))
    expect((await outbox.list()).map((e) => e.id)).toEqual([a.id])
    // The target is stored as the transport gave it.
    expect(await storage.get(`outbox/${encodeURIComponent(a.id)}/m`)).toMatchObject({
      targets: [{ target: inboxTarget(inbox), protocol: 'https', copy: 0 }],
    })
  })

  it('reads an entry without a state record as never attempted', async () => {
    const storage = memoryStorage()
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const { outbox } = newOutbox({ storage })
    const a = entry(await message(), inboxTarget(inbox))
    await outbox.send(a)
    await storage.delete(`outbox/${encodeURIComponent(a.id)}/s`)
    expect(await outbox.list()).toEqual([a])
  })
})
