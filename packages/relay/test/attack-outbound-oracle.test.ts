/**
 * Attack (issue 9, items 3 and 8): a stranger uses the relay's outbound requests as a port
 * scanner. It publishes messages "from" URL agents at loopback addresses (the relay fetches
 * their identity documents) and subscribes with webhooks there (the relay verifies them).
 * PROFILE §4: with default settings an IP literal is refused before anything is dialled, so the
 * answer is the same for open and closed ports; and where an operator allows an address, a
 * failed fetch still says only that it failed, never socket or TLS text. Loopback listeners
 * count every TCP connection they accept.
 */
import type http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { ed25519Signer, generateKeyPair } from '@agentmsg/core'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { afterEach, describe, expect, it } from 'vitest'
import { socketDetail } from '../../conformance/test/support/socket-detail.js'
import { testClock } from './attack-relay-helpers.js'
import { relayPerTest, type TestRelay, testCertificate } from './helpers.js'

const relays = relayPerTest()
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
})

type Answer = (req: http.IncomingMessage, res: http.ServerResponse) => void

/**
 * A listener on 127.0.0.1 counting accepted TCP connections and requests: raw TCP, or HTTPS
 * with `tls` answering `answer` (200 `{}` by default).
 */
async function listener(
  tls?: { cert: string; key: string },
  answer: Answer = (_q, r) => r.end('{}'),
) {
  const state = { connections: 0, requests: 0 }
  const server: net.Server = tls
    ? https.createServer(tls, (req, res) => {
        state.requests++
        answer(req, res)
      })
    : // A plain-text service: answers anything with an HTTP/1.1 error and hangs up.
      net.createServer((s) => {
        s.on('error', () => {})
        s.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
      })
  const sockets = new Set<net.Socket>()
  server.on('connection', (socket: net.Socket) => {
    state.connections++
    sockets.add(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  )
  return Object.assign(state, { port })
}

async function closedPort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const { port } = s.address() as net.AddressInfo
  await new Promise((r) => s.close(r))
  return port
}

/** Publish a message to a subscribed agent "from" the URL agent `origin`; status and body. */
async function publishFrom(relay: TestRelay, origin: string) {
  const bob = await fixtureAgent()
  await relay.client.subscribe(bob)
  const keys = await generateKeyPair()
  const sender = { id: origin, signer: ed25519Signer(keys, `${origin}#k1`) }
  const res = await relay.client.publish(await signedMessage(sender, bob.id))
  return { status: res.status, body: (await res.json()) as { code: string; message: string } }
}

/** Failed verifications are answered at the verify timeout: short here, and no limit hit. */
const QUICK = {
  webhook: { verifyTimeoutMs: 1000 },
  limits: { webhookVerifications: { burst: 100 } },
}

/** Subscribe a fresh did:key with a webhook at `url`: status, Retry-After and body text. */
async function subscribeHook(relay: TestRelay, url: string) {
  const bob = await fixtureAgent()
  const res = await relay.client.request('POST', '/relay/subscribe', {
    as: bob,
    body: { subscribe: { agent: bob.id }, push: { mode: 'webhook', url } },
  })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() }
}

/** A webhook answering the challenge as PROFILE §9 asks. */
const echo: Answer = (req, res) => {
  let text = ''
  req.on('data', (c: Buffer) => (text += c))
  req.on('end', () => {
    const { challenge } = JSON.parse(text) as { challenge: string }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ challenge }))
  })
}

const LITERALS = (port: number) => [
  `https://127.0.0.1:${port}`,
  `https://[::ffff:7f00:1]:${port}`,
  `https://0.0.0.0:${port}`,
  `https://[::1]:${port}`,
]

describe('attack: the relay as a port scanner, default settings', () => {
  it('publish "from" a loopback URL agent: no connection, the same 401 open or closed', async () => {
    const relay = await relays.start({ allowPrivate: [] })
    const open = await listener()
    const closed = await closedPort()
    for (const [i, origin] of LITERALS(open.port).entries()) {
      const a = await publishFrom(relay, origin)
      const b = await publishFrom(relay, LITERALS(closed)[i]!)
      expect(a.status).toBe(401)
      expect(a.body.code).toBe('unknown_sender')
      expect(a.body.message).toContain(`the identity document of ${origin} could not be fetched`)
      expect(socketDetail(a.body.message)).toBeUndefined()
      expect(b.status).toBe(a.status)
      expect(b.body.message.replaceAll(String(closed), 'P')).toBe(
        a.body.message.replaceAll(String(open.port), 'P'),
      )
    }
    await new Promise((r) => setTimeout(r, 100))
    expect(open.connections).toBe(0)
  })

  it('a webhook at a loopback literal: no connection, the same answer open or closed', async () => {
    const relay = await relays.start({ allowPrivate: [], ...QUICK })
    const open = await listener()
    const closed = await closedPort()
    const subscribe = (url: string) => subscribeHook(relay, url)
    for (const [i, origin] of LITERALS(open.port).entries()) {
      const a = await subscribe(`${origin}/hook`)
      const b = await subscribe(`${LITERALS(closed)[i]}/hook`)
      expect(a.status).toBe(400)
      expect(socketDetail(a.body)).toBeUndefined()
      expect(b).toEqual(a)
    }
    await new Promise((r) => setTimeout(r, 100))
    expect(open.connections).toBe(0)
  })
})

describe('attack: the relay as a port scanner, an operator allowing 127.0.0.1', () => {
  it('publish "from" a closed port, a plain TCP port, an untrusted TLS server: 503 saying only that it failed', async () => {
    const relay = await relays.start() // the test helper allows 127.0.0.1 and trusts its cert
    const plain = await listener()
    const stranger = await listener(await createDevCertificate())
    const bodies: string[] = []
    for (const port of [await closedPort(), plain.port, stranger.port]) {
      const origin = `https://127.0.0.1:${port}`
      const { status, body } = await publishFrom(relay, origin)
      expect(status).toBe(503)
      expect(body.code).toBe('unavailable')
      expect(socketDetail(body.message)).toBeUndefined()
      bodies.push(body.message.replaceAll(String(port), 'P'))
    }
    // Closed, open without TLS, open with a certificate nobody trusts: one answer.
    expect(new Set(bodies).size).toBe(1)
  })

  it('a webhook at a closed port, plain TCP, untrusted TLS, or an HTTPS service answering wrong, late or not 200: one 400', async () => {
    const relay = await relays.start(QUICK) // the relay trusts testCertificate()
    const trusted = await testCertificate()
    const ports = [
      await closedPort(),
      (await listener()).port,
      (await listener(await createDevCertificate())).port,
      (await listener(trusted)).port, // 200 without the challenge
      (await listener(trusted, (_q, r) => r.end('{"challenge":"guess"}'))).port,
      (await listener(trusted, (_q, r) => ((r.statusCode = 500), r.end('{}')))).port,
      (await listener(trusted, () => {})).port, // never answers: the verify timeout
    ]
    const answers = new Set<string>()
    for (const port of ports) {
      const { status, body } = await subscribeHook(relay, `https://127.0.0.1:${port}/hook`)
      expect(socketDetail(body)).toBeUndefined()
      answers.add(JSON.stringify({ status, body: body.replaceAll(String(port), 'P') }))
    }
    expect([...answers]).toEqual([
      JSON.stringify({
        status: 400,
        body: '{"status":"error","code":"invalid_format","message":"push.url: webhook verification failed"}',
      }),
    ])
    // The control: a webhook that echoes the challenge is verified.
    const hook = await listener(trusted, echo)
    expect((await subscribeHook(relay, `https://127.0.0.1:${hook.port}/hook`)).status).toBe(201)
  })
})

describe('attack: throwaway did:keys making the relay dial webhooks', () => {
  it('past the per-address burst, a webhook subscribe is 429 with Retry-After, and nothing is dialled', async () => {
    const clock = testClock() // stands still: no token comes back during the test
    const relay = await relays.start({ now: clock.now, clientNow: clock.now })
    const hook = await listener(await testCertificate(), echo)
    const url = `https://127.0.0.1:${hook.port}/hook`
    // The default: a burst of 5 verifications per address, each a fresh agent.
    for (let i = 0; i < 5; i++) expect((await subscribeHook(relay, url)).status).toBe(201)
    expect(hook.requests).toBe(5)
    const connections = hook.connections
    for (let i = 0; i < 25; i++) {
      const refused = await subscribeHook(relay, url)
      expect(refused.status).toBe(429)
      expect(JSON.parse(refused.body).code).toBe('rate_limited')
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1)
    }
    expect([hook.requests, hook.connections]).toEqual([5, connections])
    // Subscribing without a webhook dials nothing and is not limited by it.
    const carol = await fixtureAgent()
    await relay.client.subscribe(carol)
    // A minute later the bucket has refilled: verifications go on.
    clock.advance(60_000)
    expect((await subscribeHook(relay, url)).status).toBe(201)
    expect(hook.requests).toBe(6)
  })
})
