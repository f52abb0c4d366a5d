import type { ServerResponse } from 'node:http'
import type { Message } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { createManualClock } from '../src/clock.js'
import { DeliveryError } from '../src/delivery-error.js'
import {
  accept,
  agentId,
  cleanups,
  DAY,
  inboxTarget,
  message,
  newSender,
  next,
  reply,
  START,
  setupSenderTests,
  startInbox,
  testFetch,
  urlTarget,
} from './sender-helpers.js'

setupSenderTests()

describe('sender over real HTTPS', () => {
  it('sends the inbox headers and the message as the body, and resolves on 202', async () => {
    const inbox = await startInbox()
    const sender = newSender({ clock: createManualClock(START) })
    const msg = await message()
    const delivered = next(sender, 'delivered')
    const receipt = await sender.send(msg, inboxTarget(inbox))
    expect(receipt).toEqual({
      messageId: msg.message_id,
      target: inboxTarget(inbox),
      url: inbox.url,
    })
    expect(await delivered).toEqual({
      message_id: msg.message_id,
      target: inboxTarget(inbox),
      attempts: 1,
      status: 202,
    })
    expect(inbox.requests).toHaveLength(1)
    const [req] = inbox.requests
    expect(req!.method).toBe('POST')
    expect(req!.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(req!.headers.accept).toBe('application/json')
    expect(req!.headers['idempotency-key']).toBe(msg.message_id)
    expect(JSON.parse(req!.body)).toEqual(msg)
    expect(await sender.pending()).toEqual([])
  })

  it('retries a 5xx after a full-jitter delay, then delivers', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) =>
      n === 1
        ? reply(res, 500, { status: 'error', code: 'internal_error', message: 'x' })
        : accept(req, res, n)
    const clock = createManualClock(START)
    const sender = newSender({ clock })
    const msg = await message()
    const retry = next(sender, 'retry')
    const delivered = next(sender, 'delivered')
    const sent = sender.send(msg, inboxTarget(inbox))

    const r = await retry
    expect(r).toMatchObject({
      message_id: msg.message_id,
      attempt: 1,
      reason: 'status 500',
      status: 500,
    })
    expect(r.delayMs).toBeGreaterThanOrEqual(0)
    expect(r.delayMs).toBeLessThan(1000) // full jitter: [0, 1 s) before the first retry
    expect(r.nextAttempt).toBe(START + r.delayMs)
    const [stored] = await sender.pending()
    expect(stored).toMatchObject({
      attempts: 1,
      nextAttempt: r.nextAttempt,
      lastError: 'status 500',
    })
    expect(inbox.requests).toHaveLength(1)

    clock.advance(r.delayMs)
    await expect(sent).resolves.toMatchObject({ messageId: msg.message_id })
    expect((await delivered).attempts).toBe(2)
    expect(inbox.requests).toHaveLength(2)
    expect(await sender.pending()).toEqual([])
  })

  it('retries when the connection is dropped mid-request', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) => (n === 1 ? res.socket?.destroy() : accept(req, res, n))
    const clock = createManualClock(START)
    const sender = newSender({ clock, random: () => 0 })
    const retry = next(sender, 'retry')
    const sent = sender.send(await message(), inboxTarget(inbox))
    const r = await retry
    expect(r.reason).toMatch(/^network error/)
    expect(r.status).toBeUndefined()
    clock.advance(r.delayMs)
    await expect(sent).resolves.toBeDefined()
    expect(inbox.requests).toHaveLength(2)
  })

  it('retries a refused connection until the inbox is listening', async () => {
    const probe = await startInbox()
    const port = probe.port
    await probe.close()
    const clock = createManualClock(START)
    const sender = newSender({ clock })
    const retry = next(sender, 'retry')
    const target = urlTarget(`https://127.0.0.1:${port}/.well-known/agentmsg/inbox`)
    const sent = sender.send(await message(), target)
    const r = await retry
    expect(r.reason).toMatch(/network error.*ECONNREFUSED/)

    const inbox = await startInbox(port)
    clock.advance(r.delayMs)
    await expect(sent).resolves.toMatchObject({ target })
    expect(inbox.requests).toHaveLength(1)
  })

  it('gives up at once on a 4xx: one request, failed event, rejects with the peer code', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 400, { status: 'error', code: 'stale_message', message: 'date is 9 days old' })
    const clock = createManualClock(START)
    const sender = newSender({ clock })
    const msg = await message()
    const failed = next(sender, 'failed')
    const error = await sender.send(msg, inboxTarget(inbox)).catch((e: unknown) => e)

    expect(error).toBeInstanceOf(DeliveryError)
    expect(error).toMatchObject({
      outcome: 'failed',
      code: 'stale_message',
      status: 400,
      peerStatus: 400,
      peerCode: 'stale_message',
      attempts: 1,
    })
    expect((error as Error).message).toMatch(/date is 9 days old/)
    expect(await failed).toEqual({
      message_id: msg.message_id,
      target: inboxTarget(inbox),
      status: 400,
      code: 'stale_message',
      message: 'date is 9 days old',
      attempts: 1,
    })
    expect(clock.pending()).toBe(0)
    clock.advance(2 * DAY)
    expect(inbox.requests).toHaveLength(1)
    expect(await sender.pending()).toEqual([])
  })

  it('keeps an unknown peer code verbatim and maps the status to a profile code', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 409, { status: 'error', code: 'conflict_thing', message: 'no' })
    const sender = newSender({ clock: createManualClock(START) })
    const failed = next(sender, 'failed')
    const error = await sender.send(await message(), inboxTarget(inbox)).catch((e: unknown) => e)
    expect(error).toMatchObject({
      code: 'invalid_format',
      peerStatus: 409,
      peerCode: 'conflict_thing',
    })
    expect(await failed).toMatchObject({ status: 409, code: 'conflict_thing' })
  })

  it('does not follow redirects', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 308, undefined, { Location: 'https://127.0.0.1:1/elsewhere' })
    const sender = newSender({ clock: createManualClock(START) })
    const error = await sender.send(await message(), inboxTarget(inbox)).catch((e: unknown) => e)
    expect(error).toMatchObject({ outcome: 'failed', peerStatus: 308, code: 'not_found' })
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
            { 'Retry-After': '7' },
          )
        : accept(req, res, n)
    const clock = createManualClock(START)
    const sender = newSender({ clock })
    const retry = next(sender, 'retry')
    const sent = sender.send(await message(), inboxTarget(inbox))
    const r = await retry
    expect(r).toMatchObject({ status: 429, delayMs: 7000, nextAttempt: START + 7000 })
    expect(r.reason).toMatch(/Retry-After: 7/)

    clock.advance(6999)
    // The attempt timer has not fired, so no request can have been started.
    expect(clock.pending()).toBe(1)
    expect(inbox.requests).toHaveLength(1)
    clock.advance(1)
    expect(clock.pending()).toBe(0)
    await expect(sent).resolves.toBeDefined()
    expect(inbox.requests).toHaveLength(2)
  })

  it('waits at least Retry-After (HTTP-date) after a 503', async () => {
    const inbox = await startInbox()
    const clock = createManualClock(START)
    const until = new Date(START + 12_000).toUTCString()
    inbox.script = (req, res, n) =>
      n === 1
        ? reply(
            res,
            503,
            { status: 'error', code: 'unavailable', message: 'busy' },
            { 'Retry-After': until },
          )
        : accept(req, res, n)
    const sender = newSender({ clock })
    const retry = next(sender, 'retry')
    const sent = sender.send(await message(), inboxTarget(inbox))
    const r = await retry
    expect(r).toMatchObject({ status: 503, delayMs: 12_000 })
    clock.advance(11_999)
    expect(inbox.requests).toHaveLength(1)
    expect(clock.pending()).toBe(1)
    clock.advance(1)
    await expect(sent).resolves.toBeDefined()
    expect(inbox.requests).toHaveLength(2)
  })

  it('reports undeliverable 24 h after the first attempt', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 500, { status: 'error', code: 'internal_error', message: 'down' })
    const clock = createManualClock(START)
    const sender = newSender({ clock, random: () => 0.999 })
    const msg = await message()
    const undeliverable = next(sender, 'undeliverable')
    let retry = next(sender, 'retry')
    const outcome = sender.send(msg, inboxTarget(inbox)).catch((e: unknown) => e)
    let retries = 0
    for (;;) {
      const ev = await Promise.race([
        retry.then((r) => ({ r })),
        undeliverable.then(() => undefined),
      ])
      if (!ev) break
      retries++
      expect(ev.r.attempt).toBe(retries)
      expect(ev.r.nextAttempt).toBeLessThanOrEqual(START + DAY)
      retry = next(sender, 'retry')
      clock.advance(ev.r.delayMs)
    }
    const u = await undeliverable
    expect(u.message_id).toBe(msg.message_id)
    expect(u.firstAttempt).toBe(START)
    expect(u.attempts).toBeGreaterThan(1)
    expect(u.attempts).toBe(retries + 1)
    expect(u.attempts).toBe(inbox.requests.length)
    expect(u.reason).toMatch(/deadline/)
    expect(u.reason).toMatch(/status 500/)
    expect(clock.now()).toBe(START + DAY) // the last attempt ran at the deadline
    const error = await outcome
    expect(error).toBeInstanceOf(DeliveryError)
    expect(error).toMatchObject({ outcome: 'undeliverable', attempts: u.attempts })
    expect(await sender.pending()).toEqual([])
    expect(clock.pending()).toBe(0)
  })

  it('counts an attempt timeout as a retryable failure', async () => {
    const inbox = await startInbox()
    const held: ServerResponse[] = []
    inbox.script = (req, res, n) => (n === 1 ? held.push(res) : accept(req, res, n))
    cleanups.push(() => held.forEach((res) => res.destroy()))
    const clock = createManualClock(START)
    const sender = newSender({ clock, attemptTimeoutMs: 200 })
    const retry = next(sender, 'retry')
    const sent = sender.send(await message(), inboxTarget(inbox))
    const r = await retry
    expect(r.reason).toMatch(/^timeout/)
    clock.advance(r.delayMs)
    await expect(sent).resolves.toBeDefined()
    expect(inbox.requests).toHaveLength(2)
  })

  it('refuses http: and other non-https targets without a request or an outbox entry', async () => {
    const inbox = await startInbox()
    let calls = 0
    const fetch = testFetch()
    const sender = newSender({
      fetch: ((i, o) => (calls++, fetch(i, o))) as typeof globalThis.fetch,
    })
    const msg = await message()
    const http = urlTarget(`http://127.0.0.1:${inbox.port}/.well-known/agentmsg/inbox`)
    await expect(sender.send(msg, http)).rejects.toMatchObject({
      code: 'invalid_format',
      field: 'target.urls',
      message: expect.stringMatching(/only https: is used/),
    })
    await expect(sender.send(msg, urlTarget('ftp://x.example/inbox'))).rejects.toThrow(/https/)
    await expect(sender.send(msg, urlTarget('not a url'))).rejects.toThrow(/not a URL/)
    await expect(
      sender.send(msg, { kind: 'relay', agent: agentId(), urls: ['https://relay.example'] }),
    ).rejects.toThrow(/inbox targets/)
    expect(calls).toBe(0)
    expect(inbox.requests).toHaveLength(0)
    expect(await sender.pending()).toEqual([])
  })

  it('refuses a message over 1 MiB without a request or an outbox entry', async () => {
    const inbox = await startInbox()
    const sender = newSender()
    const big = await message('x'.repeat(1_048_576))
    await expect(sender.send(big, inboxTarget(inbox))).rejects.toMatchObject({
      code: 'payload_too_large',
      status: 413,
    })
    expect(inbox.requests).toHaveLength(0)
    expect(await sender.pending()).toEqual([])
  })

  it('refuses an invalid message before storing it', async () => {
    const sender = newSender()
    const bad = { ...(await message()), message_id: 'has spaces' } as Message
    await expect(sender.send(bad, urlTarget('https://127.0.0.1:1/inbox'))).rejects.toMatchObject({
      code: 'invalid_format',
      field: 'message_id',
    })
    expect(await sender.pending()).toEqual([])
  })

  it('fails at once when the address policy refuses the inbox address', async () => {
    const inbox = await startInbox()
    const sender = newSender({ fetch: testFetch([]), clock: createManualClock(START) })
    const failed = next(sender, 'failed')
    const error = await sender.send(await message(), inboxTarget(inbox)).catch((e: unknown) => e)
    expect(error).toMatchObject({ outcome: 'failed', code: 'forbidden', peerStatus: undefined })
    expect(await failed).toMatchObject({
      code: 'forbidden',
      message: expect.stringMatching(/127\.0\.0\.1/),
    })
    expect(inbox.requests).toHaveLength(0)
  })
})
