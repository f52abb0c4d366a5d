/**
 * The Node adapter (serveHttps, getRequestListener) over real HTTPS: early stop of oversized
 * uploads, CORS, the documents, graceful close, and nothing lost across a restart.
 */
import { createServer, request as httpsRequest, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { type Message, memoryStorage } from '@agentmsg/core'
import { didKeyResolver } from '@agentmsg/core/receive'
import { afterEach, describe, expect, it } from 'vitest'
import { createInboxHandler } from '../src/inbox/handler.js'
import { getRequestListener, serveHttps } from '../src/node-server.js'
import {
  deferred,
  INBOX_PATH,
  post,
  send,
  startInbox,
  stopInboxes,
  type TestInbox,
  until,
} from './inbox-helpers.js'
import { testCertificate } from './tls.js'

afterEach(stopInboxes)

const MiB = 1024 * 1024

/** A node:https server running `getRequestListener(handler)`; closed after the test. */
async function listen(handler: Parameters<typeof getRequestListener>[0]): Promise<string> {
  const { cert, key } = await testCertificate()
  const server = createServer({ cert, key, minVersion: 'TLSv1.2' }, getRequestListener(handler))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`
}
const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
  }
})

/**
 * The inbox URL of a fresh inbox, served either by serveHttps (the direct IncomingMessage
 * path) or through web Request/Response objects (a plain fetch handler wrapping it).
 */
async function inboxVia(mode: 'direct' | 'web'): Promise<{ url: string; inbox: TestInbox }> {
  const inbox = await startInbox()
  if (mode === 'direct') return { url: inbox.inboxUrl, inbox }
  const h = inbox.handler
  const origin = await listen({ fetch: (request, info) => h.fetch(request, info) })
  return { url: origin + INBOX_PATH, inbox }
}

describe.each(['direct', 'web'] as const)('oversized uploads (%s adapter path)', (mode) => {
  it('stops reading a 50 MiB streamed upload early: 413, connection closed, memory flat', async () => {
    const { url } = await inboxVia(mode)
    const { ca } = await testCertificate()
    global.gc?.()
    const rss0 = process.memoryUsage().rss
    let peakGrowth = 0
    const sampler = setInterval(() => {
      peakGrowth = Math.max(peakGrowth, process.memoryUsage().rss - rss0)
    }, 5)
    // A client that ignores the answer and keeps pushing until the connection is gone.
    const result = await new Promise<{
      status: number
      code?: string
      connection?: string
      written: number
    }>((resolve) => {
      let written = 0
      let status = 0
      let code: string | undefined
      let connection: string | undefined
      const req = httpsRequest(
        url,
        { method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json' } },
        (res) => {
          status = res.statusCode ?? 0
          connection = res.headers.connection
          let body = ''
          res.on('data', (c: Buffer) => (body += c.toString()))
          res.on('end', () => (code = JSON.parse(body).code))
        },
      )
      const done = () => resolve({ status, code, connection, written })
      req.on('error', done)
      req.on('close', done)
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      const pump = (): void => {
        while (written < 50 * MiB) {
          written += chunk.length
          if (!req.write(chunk)) {
            req.once('drain', pump)
            return
          }
        }
        req.end()
      }
      pump()
    })
    clearInterval(sampler)
    expect(result.status).toBe(413)
    expect(result.code).toBe('payload_too_large')
    expect(result.connection).toBe('close')
    // The server read about 1 MiB and closed: the client got nowhere near 50 MiB.
    expect(result.written).toBeLessThan(10 * MiB)
    expect(peakGrowth).toBeLessThan(25 * MiB)
  })

  it('accepts a message, and the same message twice is processed once', async () => {
    const { url, inbox } = await inboxVia(mode)
    const m = await signedMessage(await fixtureAgent(), inbox.agentId)
    expect((await post(url, m)).status).toBe(202)
    expect((await post(url, m)).json).toEqual({ status: 'accepted', message_id: m.message_id })
    await until(() => inbox.received.length === 1 && inbox.handler.pending === 0)
  })

  it('refuses a declared Content-Length over the cap without reading the body', async () => {
    const { url } = await inboxVia(mode)
    const { ca } = await testCertificate()
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        url,
        {
          method: 'POST',
          ca,
          agent: false,
          headers: { 'content-type': 'application/json', 'content-length': String(50 * MiB) },
        },
        (res) => {
          resolve(res.statusCode ?? 0)
          req.destroy()
        },
      )
      req.on('error', reject)
      req.write('{') // and then never the rest
    })
    expect(status).toBe(413)
  })
})

describe('CORS and documents', () => {
  it('answers preflights with PROFILE §6’s headers, and every response allows any origin', async () => {
    const inbox = await startInbox()
    const r = await send(inbox.inboxUrl, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    })
    expect(r.status).toBe(204)
    expect(r.headers['access-control-allow-origin']).toBe('*')
    expect(r.headers['access-control-allow-methods']).toBe('POST, OPTIONS')
    expect(r.headers['access-control-allow-headers']).toBe(
      'Content-Type, Accept, Idempotency-Key, Signature, Signature-Input, Content-Digest, Last-Event-ID',
    )
    expect(r.headers['access-control-expose-headers']).toBe('Retry-After')
    expect(r.headers['access-control-allow-credentials']).toBeUndefined()
    const doc = await send(inbox.url + '/.well-known/agentmsg/identity', { method: 'OPTIONS' })
    expect(doc.status).toBe(204)
    expect(doc.headers['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS')
    const m = await signedMessage(await fixtureAgent(), inbox.agentId)
    expect((await post(inbox.inboxUrl, m)).headers['access-control-allow-origin']).toBe('*')
  })

  it('serves the identity document and the PROFILE §10 capabilities under a base path', async () => {
    const agent = await fixtureAgent()
    const identity = {
      agentmsg: 5 as const,
      agent_id: agent.id,
      display: 'Bob',
      keys: [],
      endpoints: {
        inbox: 'https://bob.example/agents/bob/.well-known/agentmsg/inbox',
        capabilities: 'https://bob.example/agents/bob/.well-known/agentmsg/capabilities',
      },
      relay: { urls: ['https://relay.example'], preference: 'any' as const },
    }
    const inbox = await startInbox({
      agentId: agent.id,
      basePath: '/agents/bob',
      identityDocument: identity,
      limits: { perSender: { perMinute: 30, burst: 5 } },
    })
    const base = inbox.url + '/agents/bob/.well-known/agentmsg/'
    const id = await send(base + 'identity', { method: 'GET' })
    expect(id.status).toBe(200)
    expect(id.headers['content-type']).toBe('application/json')
    expect(id.headers['cache-control']).toBe('max-age=300')
    expect(id.json).toEqual(identity)
    const head = await send(base + 'identity', { method: 'HEAD' })
    expect([head.status, head.text]).toEqual([200, ''])
    const caps = await send(base + 'capabilities', { method: 'GET' })
    expect(caps.json).toEqual({
      agentmsg: 5,
      agent_id: agent.id,
      content_types: ['application/json'],
      phases: ['greeting', 'request', 'response', 'update', 'close', 'error'],
      auth_levels: [0, 1, 2, 3],
      encryption: [],
      max_message_bytes: 1_048_576,
      rate_limit: { messages_per_minute: 30, burst: 5 },
      relay: { urls: ['https://relay.example'], preference: 'any' },
    })
    expect((await send(inbox.url + INBOX_PATH, { method: 'OPTIONS' })).status).toBe(404)
    const m = await signedMessage(await fixtureAgent(), agent.id)
    expect((await post(inbox.inboxUrl, m)).status).toBe(202)
  })
})

describe('server lifecycle', () => {
  it('getRequestListener works in a plain node:https server', async () => {
    const received: Message[] = []
    const agent = await fixtureAgent()
    const handler = createInboxHandler({
      agentId: agent.id,
      resolver: didKeyResolver(),
      onMessage: async (m) => void received.push(m),
    })
    const url = (await listen(handler)) + INBOX_PATH
    const m = await signedMessage(await fixtureAgent(), agent.id)
    expect((await post(url, m)).status).toBe(202)
    await handler.close()
    expect(received.map((x) => x.message_id)).toEqual([m.message_id])
  })

  it('close() stops accepting and waits until every accepted message was processed', async () => {
    const { cert, key } = await testCertificate()
    const agent = await fixtureAgent()
    const processed: string[] = []
    const handler = createInboxHandler({
      agentId: agent.id,
      resolver: didKeyResolver(),
      onMessage: async (m) => {
        await new Promise((r) => setTimeout(r, 100))
        processed.push(m.message_id)
      },
    })
    const server = await serveHttps(handler, { tls: { cert, key } })
    const m = await signedMessage(await fixtureAgent(), agent.id)
    expect((await post(server.url + INBOX_PATH, m)).status).toBe(202)
    await server.close()
    expect(processed).toEqual([m.message_id])
    await expect(post(server.url + INBOX_PATH, m)).rejects.toThrow(/ECONNREFUSED/)
  })

  it('needs TLS unless plain http behind a proxy is asked for explicitly', async () => {
    const handler = createInboxHandler({
      agentId: 'bob',
      resolver: didKeyResolver(),
      onMessage: async () => undefined,
    })
    await expect(serveHttps(handler, {})).rejects.toThrow(/tls/)
    const server = await serveHttps(handler, { insecureHttpBehindProxy: true })
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    await server.close()
  })
})

describe('persistence (nothing lost on a crash)', () => {
  it('a message accepted but never processed is processed by the next handler on the same storage', async () => {
    const storage = memoryStorage()
    const stuck = deferred()
    const first = await startInbox({ storage, onMessage: () => stuck.promise })
    const alice = await fixtureAgent()
    const a = await signedMessage(alice, first.agentId)
    const b = await signedMessage(alice, first.agentId)
    expect((await post(first.inboxUrl, a)).status).toBe(202)
    expect((await post(first.inboxUrl, b)).status).toBe(202)
    // The process "dies": nothing more runs, the queue is never drained.
    await first.handler.close({ drain: false })
    await first.server.close()

    const second = await startInbox({ storage, agentId: first.agentId })
    await second.handler.ready
    await until(() => second.received.length === 2)
    expect(second.received.map((r) => r.message.message_id)).toEqual([a.message_id, b.message_id])
    expect(second.received[0]!.info).toMatchObject({
      level: 3,
      source: 'did-key',
      transport: 'https',
    })
    await until(() => second.handler.pending === 0)
    expect(await storage.list('inbox/pending/')).toEqual([])
    // The sender retrying after a lost 202 gets a 202 and no second delivery.
    expect((await post(second.inboxUrl, a)).status).toBe(202)
    await new Promise((r) => setTimeout(r, 50))
    expect(second.received).toHaveLength(2)
  })
})
