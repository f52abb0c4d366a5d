/**
 * Relay client behaviour against small scripted HTTPS servers: failover rules, SSE resume with
 * Last-Event-ID and dedupe by cursor, acks only after the handler, handler failures redelivered,
 * fatal answers, the idle watchdog; plus backoff and error mapping.
 */
import { createServer, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  createKeyResolver,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
  type KeyResolver,
  type Message,
  type Signer,
} from '@agentmsg/core'
import {
  createAddressPolicy,
  createDevCertificate,
  createNodeFetch,
  type DevCertificate,
} from '@agentmsg/transport-https/node'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { NonceMemory, verifyRequest } from '../src/http-signature.js'
import {
  backoffDelay,
  createRelayClient,
  parseRetryAfter,
  publishToRelay,
  publishWithFailover,
  relayTransport,
  type RelayClient,
} from '../src/client/index.js'
import { errorFromResponse } from '../src/client/http.js'

interface Agent {
  did: string
  signer: Signer
}
async function newAgent(): Promise<Agent> {
  const keys = await generateKeyPair()
  return { did: didKeyFromPublicKey(keys.publicKey), signer: ed25519Signer(keys) }
}
let seq = 0
async function message(from: Agent, to: string, text: string): Promise<Message> {
  return signMessage(
    createMessage({
      from: from.did,
      to,
      conversationId: 'c',
      sequence: seq++,
      phase: 'request',
      contentType: 'text/plain',
      text,
    }),
    from.signer,
  )
}

let cert: DevCertificate
let fetchFn: typeof fetch
let alice: Agent
let bob: Agent
const servers: Server[] = []
const cleanups: Array<() => Promise<void>> = []

beforeAll(async () => {
  cert = await createDevCertificate()
  fetchFn = createNodeFetch({
    ca: cert.cert,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    timeoutMs: 0,
  })
  alice = await newAgent()
  bob = await newAgent()
})

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => {})
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((r) => s.close(r))
  }
})

type Route = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>

async function scripted(route: Route): Promise<string> {
  const server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => void route(req, res, Buffer.concat(chunks)))
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify(body))
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('backoff and errors', () => {
  it('full jitter: uniform below min(cap, base·2^attempt)', () => {
    expect(backoffDelay(0, { random: () => 0 })).toBe(0)
    expect(backoffDelay(0, { random: () => 0.999999 })).toBe(499)
    expect(backoffDelay(3, { random: () => 0.5 })).toBe(2000)
    expect(backoffDelay(50, { random: () => 0.999999 })).toBe(29_999)
    expect(backoffDelay(5000, { random: () => 0.5, capMs: 1000 })).toBe(500)
  })

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('7')).toBe(7)
    expect(parseRetryAfter(null)).toBeUndefined()
    expect(parseRetryAfter('soon')).toBeUndefined()
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30)
  })

  it('maps relay answers to AgentMsgError codes', async () => {
    const e1 = await errorFromResponse(
      new Response('{"status":"error","code":"rate_limited","message":"slow down"}', {
        status: 429,
        headers: { 'retry-after': '3' },
      }),
      'x',
    )
    expect(e1).toMatchObject({ code: 'rate_limited', status: 429, retryAfter: 3 })
    expect(e1.message).toContain('slow down')
    // A code that does not go with the status is not believed; a proxy's 502 is `unavailable`.
    expect(
      await errorFromResponse(new Response('{"code":"not_found"}', { status: 400 }), 'x'),
    ).toMatchObject({ code: 'invalid_format' })
    expect(await errorFromResponse(new Response('<html>', { status: 502 }), 'x')).toMatchObject({
      code: 'unavailable',
    })
    expect(await errorFromResponse(new Response('', { status: 409 }), 'x')).toMatchObject({
      code: 'invalid_format',
    })
  })
})

describe('publish and failover', () => {
  const accepting =
    (hits: string[], name: string): Route =>
    (_req, res, body) => {
      hits.push(name)
      const m = JSON.parse(body.toString()) as Message
      json(res, 202, { status: 'accepted', message_id: m.message_id })
    }
  const failing =
    (hits: string[], name: string, status: number, code: string, headers = {}): Route =>
    (_req, res) => {
      hits.push(name)
      json(res, status, { status: 'error', code, message: name }, headers)
    }

  it('moves on after a closed port, a 5xx and a 429; stops on another 4xx', async () => {
    const hits: string[] = []
    const down = await scripted(() => {})
    servers.pop()!.close() // nothing listens there now
    const s503 = await scripted(failing(hits, '503', 503, 'unavailable', { 'retry-after': '5' }))
    const s429 = await scripted(failing(hits, '429', 429, 'rate_limited', { 'retry-after': '2' }))
    const ok = await scripted(accepting(hits, 'ok'))
    const s400 = await scripted(failing(hits, '400', 400, 'invalid_format'))
    const m = await message(alice, bob.did, 'hi')

    const result = await publishWithFailover(m, [down, s503, s429, ok], { fetch: fetchFn })
    expect(result.relayUrl).toBe(ok)
    expect(result.messageId).toBe(m.message_id)
    expect(result.failed.map((f) => f.relayUrl)).toEqual([down, s503, s429])
    expect(result.failed[0]!.error).toMatchObject({ code: 'unavailable' })
    expect(hits).toEqual(['503', '429', 'ok'])

    hits.length = 0
    await expect(publishWithFailover(m, [s400, ok], { fetch: fetchFn })).rejects.toMatchObject({
      code: 'invalid_format',
      status: 400,
    })
    expect(hits).toEqual(['400'])

    // Every relay busy: `unavailable`, with the smallest Retry-After.
    hits.length = 0
    const err = await publishWithFailover(m, [s503, s429], { fetch: fetchFn }).catch((e) => e)
    expect(err).toMatchObject({ code: 'unavailable', retryAfter: 2 })
    expect((err as Error).cause).toBeInstanceOf(AggregateError)

    // 'any' starts at a random relay and goes round.
    hits.length = 0
    const any = await publishWithFailover(m, [ok, s503], {
      fetch: fetchFn,
      preference: 'any',
      random: () => 0.9,
    })
    expect(any.relayUrl).toBe(ok)
    expect(hits).toEqual(['503', 'ok'])
  })

  it('refuses locally what no relay would take, and reports errors with the relay code', async () => {
    const hits: string[] = []
    const s = await scripted(failing(hits, 'nf', 404, 'not_found'))
    const m = await message(alice, bob.did, 'x')
    await expect(publishToRelay(m, s, { fetch: fetchFn })).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    })
    const { security: _s, ...unsigned } = m
    await expect(publishToRelay(unsigned as Message, s, { fetch: fetchFn })).rejects.toMatchObject({
      code: 'invalid_signature',
    })
    const traced = {
      ...m,
      trace: { received: [{ by: 'relay:x', with: 'y', at: m.date, from: m.from.agent }] },
    }
    await expect(publishToRelay(traced, s, { fetch: fetchFn })).rejects.toMatchObject({
      code: 'invalid_format',
    })
    await expect(publishToRelay(m, 'http://127.0.0.1:1', { fetch: fetchFn })).rejects.toMatchObject(
      {
        code: 'invalid_format',
      },
    )
    expect(hits).toEqual(['nf'])
  })
})

/** A scripted SSE relay that checks agent auth like the real one. */
async function sseRelay(script: {
  stream: (n: number, req: IncomingMessage, res: ServerResponse) => void
  onAck?: (id: string, from: string | null) => void
}) {
  const resolver = createKeyResolver()
  const nonces = new NonceMemory()
  const seen = {
    streams: [] as Array<{ lastEventId?: string; after: string | null }>,
    acks: [] as string[],
  }
  let base = ''
  base = await scripted(async (req, res, body) => {
    const url = new URL(req.url!, base)
    try {
      await verifyRequest({
        method: req.method!,
        targetUri: base + req.url,
        headers: req.headers as Record<string, string>,
        body,
        resolver,
        nonces,
        expectedAgent: url.searchParams.get('agent') ?? undefined,
      })
    } catch (e) {
      return json(res, 401, {
        status: 'error',
        code: (e as { code: string }).code,
        message: String(e),
      })
    }
    if (req.method === 'GET' && url.pathname === '/relay/stream') {
      const lastEventId = req.headers['last-event-id'] as string | undefined
      seen.streams.push({
        ...(lastEventId ? { lastEventId } : {}),
        after: url.searchParams.get('after'),
      })
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
      res.write(': hello\n\n')
      script.stream(seen.streams.length, req, res)
      return
    }
    if (req.method === 'DELETE' && url.pathname.startsWith('/relay/messages/')) {
      const id = decodeURIComponent(url.pathname.slice('/relay/messages/'.length))
      seen.acks.push(id)
      script.onAck?.(id, url.searchParams.get('from'))
      res.writeHead(204).end()
      return
    }
    json(res, 404, { status: 'error', code: 'not_found', message: 'no route' })
  })
  return { url: base, seen, resolver }
}

const event = (cursor: string, m: Message) =>
  `id: ${cursor}\nevent: message\ndata: ${JSON.stringify(m)}\n\n`

function clientOf(url: string, resolver?: KeyResolver): RelayClient {
  return createRelayClient({
    relayUrl: url,
    agent: bob.did,
    signer: bob.signer,
    resolver: resolver ?? createKeyResolver(),
    fetch: fetchFn,
  })
}

describe('SSE stream against a scripted relay', () => {
  it('resumes with Last-Event-ID and never hands the same cursor over twice', async () => {
    const [m1, m2, m3] = [
      await message(alice, bob.did, '1'),
      await message(alice, bob.did, '2'),
      await message(alice, bob.did, '3'),
    ]
    const relay = await sseRelay({
      stream(n, _req, res) {
        if (n === 1) {
          res.write(event('c1', m1!))
          res.end(event('c2', m2!)) // then the connection drops
        } else {
          // A sloppy relay that resends the last entry the client completed.
          res.write(event('c2', m2!))
          res.write(event('c3', m3!))
        }
      },
    })
    const handled: string[] = []
    const acksAtHandle: number[] = []
    const handle = clientOf(relay.url).stream(
      async ({ message: m, cursor }) => {
        acksAtHandle.push(relay.seen.acks.length)
        handled.push(`${cursor}:${m.body.parts[0]!.type === 'text' ? m.body.parts[0]!.text : ''}`)
      },
      { backoff: { baseMs: 10, capMs: 20 } },
    )
    cleanups.push(() => handle.close())
    await until(() => handled.length === 3 && handle.cursor === 'c3')
    expect(handled).toEqual(['c1:1', 'c2:2', 'c3:3'])
    // Each ack came after its handler (the handler for entry n saw n−1 acks).
    expect(acksAtHandle).toEqual([0, 1, 2])
    expect(relay.seen.acks).toEqual([m1!.message_id, m2!.message_id, m3!.message_id])
    expect(relay.seen.streams[0]).toEqual({ after: null })
    expect(relay.seen.streams[1]).toEqual({ lastEventId: 'c2', after: 'c2' })
    expect(handle.cursor).toBe('c3')
    await handle.close()
    await expect(handle.done).resolves.toBeUndefined()
  })

  it('redelivers a message whose handler failed, and acks it only after success', async () => {
    const m1 = await message(alice, bob.did, 'flaky')
    const relay = await sseRelay({
      stream(_n, _req, res) {
        res.write(event('c1', m1))
      },
    })
    let calls = 0
    const errors: unknown[] = []
    const handle = clientOf(relay.url).stream(
      async () => {
        calls++
        if (calls === 1) throw new Error('handler broke')
      },
      { backoff: { baseMs: 10, capMs: 20 }, onError: (e) => errors.push(e) },
    )
    cleanups.push(() => handle.close())
    await until(() => relay.seen.acks.length === 1)
    expect(calls).toBe(2)
    expect(relay.seen.streams).toHaveLength(2)
    expect(relay.seen.streams[1]).toEqual({ after: null }) // nothing completed before it
    expect(errors).toContainEqual(expect.objectContaining({ message: 'handler broke' }))
  })

  it('stops on a 4xx other than 429, and reconnects when the stream goes quiet', async () => {
    const forbidden = await scripted((_req, res) =>
      json(res, 403, { status: 'error', code: 'forbidden', message: 'no' }),
    )
    const handle = clientOf(forbidden).stream(() => {}, { backoff: { baseMs: 10 } })
    await expect(handle.done).rejects.toMatchObject({ code: 'forbidden' })

    const quiet = await sseRelay({ stream() {} })
    const errors: unknown[] = []
    const h2 = clientOf(quiet.url).stream(() => {}, {
      idleTimeoutMs: 150,
      backoff: { baseMs: 10, capMs: 20 },
      onError: (e) => errors.push(e),
    })
    cleanups.push(() => h2.close())
    await until(() => quiet.seen.streams.length >= 2)
    expect(errors[0]).toMatchObject({ code: 'unavailable' })
    await h2.close()
  })

  it('retries a message whose key could not be looked up now, without skipping it', async () => {
    const m1 = await message(alice, bob.did, 'later')
    const relay = await sseRelay({
      stream(_n, _req, res) {
        res.write(event('c1', m1))
      },
    })
    const real = createKeyResolver()
    let lookups = 0
    const flaky: KeyResolver = {
      resolve: (lookup, o) => {
        lookups++
        return lookups === 1
          ? Promise.resolve({ status: 'unavailable', reason: 'dns down', retryAfter: 0 })
          : real.resolve(lookup, o)
      },
    }
    const handled: string[] = []
    const rejected: unknown[] = []
    const handle = clientOf(relay.url, flaky).stream(
      ({ message: m }) => void handled.push(m.message_id),
      {
        backoff: { baseMs: 10, capMs: 20 },
        onRejected: (r) => rejected.push(r),
      },
    )
    cleanups.push(() => handle.close())
    await until(() => handled.length === 1)
    expect(rejected).toEqual([])
    expect(relay.seen.streams.length).toBe(2)
  })

  it('relayTransport sends only to relay targets', async () => {
    const t = relayTransport({ fetch: fetchFn })
    const m = await message(alice, bob.did, 'x')
    await expect(t.send(m, { kind: 'inbox', url: 'https://a.example' })).rejects.toMatchObject({
      code: 'invalid_format',
    })
    await expect(t.listen(async () => {})).rejects.toMatchObject({ code: 'invalid_format' })
    await t.close()
  })
})
