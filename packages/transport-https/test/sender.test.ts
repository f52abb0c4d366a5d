import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  memoryStorage,
  signMessage,
  type KeyPair,
  type Message,
  type Storage,
} from '@agentmsg/core'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createAddressPolicy } from '../src/address-policy.js'
import { createManualClock } from '../src/clock.js'
import { createNodeFetch } from '../src/node-fetch.js'
import {
  DeliveryError,
  createSender,
  type HttpsSender,
  type SenderEvents,
  type SenderOptions,
} from '../src/sender.js'
import { testCertificate } from './tls.js'

const DAY = 86_400_000
const START = 1_800_000_000_000 // a whole second, so HTTP-dates are exact

interface Received {
  method: string
  headers: IncomingHttpHeaders
  body: string
  messageId: string | undefined
}

type Script = (req: Received, res: ServerResponse, n: number) => void

interface TestInbox {
  port: number
  url: string
  requests: Received[]
  /** How each request is answered; `n` counts from 1. Defaults to 202. */
  script: Script
  /** message_id → how many times it was answered 202. */
  accepted: Map<string, number>
  close(): Promise<void>
}

let cert: { cert: string; key: string }
let keys: KeyPair
let agent: string
const cleanups: Array<() => Promise<unknown> | unknown> = []

beforeAll(async () => {
  cert = await testCertificate()
  keys = await generateKeyPair()
  agent = didKeyFromPublicKey(keys.publicKey)
})

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!()
})

function reply(
  res: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const text = body === undefined ? '' : JSON.stringify(body)
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers })
  res.end(text)
}

const accept: Script = (req, res) =>
  reply(res, 202, { status: 'accepted', message_id: req.messageId })

async function startInbox(port = 0): Promise<TestInbox> {
  const inbox = {
    requests: [] as Received[],
    script: accept,
    accepted: new Map<string, number>(),
  } as TestInbox
  const server = https.createServer(
    { cert: cert.cert, key: cert.key, minVersion: 'TLSv1.2' },
    (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        let messageId: string | undefined
        try {
          messageId = (JSON.parse(body) as { message_id?: string }).message_id
        } catch {
          // not JSON
        }
        const received: Received = {
          method: req.method ?? '',
          headers: req.headers,
          body,
          messageId,
        }
        inbox.requests.push(received)
        res.on('finish', () => {
          if (res.statusCode === 202 && messageId) {
            inbox.accepted.set(messageId, (inbox.accepted.get(messageId) ?? 0) + 1)
          }
        })
        inbox.script(received, res, inbox.requests.length)
      })
    },
  )
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  inbox.port = (server.address() as AddressInfo).port
  inbox.url = `https://127.0.0.1:${inbox.port}/.well-known/agentmsg/inbox`
  let closed = false
  inbox.close = async () => {
    if (closed) return
    closed = true
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  cleanups.push(inbox.close)
  return inbox
}

function testFetch(allow = ['127.0.0.1']): typeof fetch {
  return createNodeFetch({ ca: cert.cert, addressPolicy: createAddressPolicy({ allow }) })
}

function newSender(options: SenderOptions = {}): HttpsSender {
  const sender = createSender({ fetch: testFetch(), ...options })
  cleanups.push(() => sender.close())
  return sender
}

async function message(text = 'hello', extra: Partial<Parameters<typeof createMessage>[0]> = {}) {
  const unsigned = createMessage({
    from: agent,
    to: agent,
    conversationId: 'c-1',
    sequence: 0,
    phase: 'greeting',
    text,
    ...extra,
  })
  return signMessage(unsigned, ed25519Signer(keys))
}

/** The next event of this kind (subscribe before causing it). */
function next<K extends keyof SenderEvents>(
  sender: HttpsSender,
  name: K,
): Promise<SenderEvents[K]> {
  return new Promise((resolve) => {
    const off = sender.on(name, (event) => {
      off()
      resolve(event)
    })
  })
}

const inboxTarget = (inbox: TestInbox) => ({ kind: 'inbox', url: inbox.url }) as const

describe('sender over real HTTPS', () => {
  it('sends the inbox headers and the message as the body, and resolves on 202', async () => {
    const inbox = await startInbox()
    const sender = newSender({ clock: createManualClock(START) })
    const msg = await message()
    const delivered = next(sender, 'delivered')
    const receipt = await sender.send(msg, inboxTarget(inbox))
    expect(receipt).toEqual({ messageId: msg.message_id, target: inboxTarget(inbox) })
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
    const target = {
      kind: 'inbox',
      url: `https://127.0.0.1:${port}/.well-known/agentmsg/inbox`,
    } as const
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
    const http = {
      kind: 'inbox',
      url: `http://127.0.0.1:${inbox.port}/.well-known/agentmsg/inbox`,
    } as const
    await expect(sender.send(msg, http)).rejects.toMatchObject({
      code: 'invalid_format',
      field: 'target.url',
      message: expect.stringMatching(/only https: is used/),
    })
    await expect(sender.send(msg, { kind: 'inbox', url: 'ftp://x.example/inbox' })).rejects.toThrow(
      /https/,
    )
    await expect(sender.send(msg, { kind: 'inbox', url: 'not a url' })).rejects.toThrow(/not a URL/)
    await expect(
      sender.send(msg, { kind: 'relay', relayUrl: 'https://relay.example' }),
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
    await expect(
      sender.send(bad, { kind: 'inbox', url: 'https://127.0.0.1:1/inbox' }),
    ).rejects.toMatchObject({
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

  it('a new sender on the same storage resumes pending deliveries, delivering each once', async () => {
    const inbox = await startInbox()
    let healthy = false
    inbox.script = (req, res, n) => (healthy ? accept(req, res, n) : reply(res, 500))
    const storage: Storage = memoryStorage()
    const clock = createManualClock(START)
    const a = newSender({ storage, clock })
    const retry = next(a, 'retry')
    const msg = await message()
    const sentByA = a.send(msg, inboxTarget(inbox)).catch((e: unknown) => e)
    const r = await retry
    await a.close()
    expect(await sentByA).toMatchObject({ outcome: 'closed', code: 'unavailable' })
    expect(clock.pending()).toBe(0) // A's timer is gone
    const [stored] = await a.pending()
    expect(stored).toMatchObject({ attempts: 1, nextAttempt: r.nextAttempt, firstAttempt: START })

    healthy = true
    const b = newSender({ storage, clock })
    const delivered = next(b, 'delivered')
    expect(await b.resume()).toBe(1) // joins the automatic resume
    expect(clock.pending()).toBe(1)
    clock.advance(r.delayMs)
    expect(await delivered).toMatchObject({ message_id: msg.message_id, attempts: 2 })
    expect(await b.pending()).toEqual([])
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
    expect(inbox.requests).toHaveLength(2)
    // A later resume finds nothing, and nothing else is sent.
    expect(await b.resume()).toBe(0)
    clock.runAll()
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
  })

  it('resumes a due entry at once, and one past the deadline as undeliverable', async () => {
    const inbox = await startInbox()
    const storage = memoryStorage()
    const clock = createManualClock(START)
    const a = newSender({ storage, clock })
    inbox.script = (_req, res) => reply(res, 500)
    const retries = [next(a, 'retry')]
    const m1 = await message('one')
    void a.send(m1, inboxTarget(inbox)).catch(() => {})
    await retries[0]
    await a.close()

    inbox.script = accept
    clock.advance(10_000) // m1 is now due
    const b = newSender({ storage, clock, resume: false })
    const delivered = next(b, 'delivered')
    expect(await b.resume()).toBe(1)
    expect(await delivered).toMatchObject({ message_id: m1.message_id })

    // A second message left pending past its deadline while no sender ran.
    inbox.script = (_req, res) => reply(res, 500)
    const c = newSender({ storage, clock })
    const retry = next(c, 'retry')
    const m2 = await message('two')
    void c.send(m2, inboxTarget(inbox)).catch(() => {})
    await retry
    await c.close()
    clock.advance(DAY + 1)
    const d = newSender({ storage, clock, resume: false })
    const undeliverable = next(d, 'undeliverable')
    await d.resume()
    expect(await undeliverable).toMatchObject({
      message_id: m2.message_id,
      reason: expect.stringMatching(/deadline/),
    })
    expect(await d.pending()).toEqual([])
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
    const sender = newSender({ clock: createManualClock(START) })
    const [m1, m2] = await Promise.all([message('one'), message('two')])
    await Promise.all([sender.send(m1, inboxTarget(inbox)), sender.send(m2, inboxTarget(inbox))])
    expect(inbox.requests).toHaveLength(2)
  })

  it('never attempts one message twice at once: a repeated send joins the pending delivery', async () => {
    const inbox = await startInbox()
    const sender = newSender({ clock: createManualClock(START) })
    const msg = await message()
    const [r1, r2] = await Promise.all([
      sender.send(msg, inboxTarget(inbox)),
      sender.send(msg, inboxTarget(inbox)),
    ])
    expect(r1).toEqual(r2)
    expect(inbox.requests).toHaveLength(1)
  })

  it('cancels a delivery when the signal aborts', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500)
    const clock = createManualClock(START)
    const sender = newSender({ clock })
    const retry = next(sender, 'retry')
    const controller = new AbortController()
    const sent = sender.send(await message(), inboxTarget(inbox), { signal: controller.signal })
    await retry
    controller.abort(new Error('user gave up'))
    await expect(sent).rejects.toThrow('user gave up')
    await expect.poll(() => sender.pending()).toEqual([])
    expect(clock.pending()).toBe(0)
    clock.runAll()
    expect(inbox.requests).toHaveLength(1)
  })

  it('refuses to send after close', async () => {
    const sender = newSender()
    await sender.close()
    await expect(
      sender.send(await message(), { kind: 'inbox', url: 'https://127.0.0.1:1/' }),
    ).rejects.toThrow(/closed/)
  })

  it('is a core Transport with protocol https', () => {
    const sender = newSender()
    expect(sender.protocol).toBe('https')
    expect(typeof sender.send).toBe('function')
    expect(typeof sender.close).toBe('function')
  })
})

describe('sender on the system clock', () => {
  it('works with the real clock and timers', async () => {
    const inbox = await startInbox()
    inbox.script = (req, res, n) => (n === 1 ? reply(res, 503) : accept(req, res, n))
    // random 0: the first retry is due at once, so no waiting in real time.
    const sender = newSender({ random: () => 0 })
    await expect(sender.send(await message(), inboxTarget(inbox))).resolves.toBeDefined()
    expect(inbox.requests).toHaveLength(2)
  })
})
