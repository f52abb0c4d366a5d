/**
 * Attack (issue 9, items 3 and 8): a stranger uses the relay's outbound requests as a port
 * scanner. It publishes messages "from" URL agents at loopback addresses (the relay fetches
 * their identity documents) and subscribes with webhooks there (the relay verifies them).
 * PROFILE §4: with default settings an IP literal is refused before anything is dialled, so the
 * answer is the same for open and closed ports; and where an operator allows an address, a
 * failed fetch still says only that it failed, never socket or TLS text. Loopback listeners
 * count every TCP connection they accept.
 */
import https from 'node:https'
import net from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { ed25519Signer, generateKeyPair } from '@agentmsg/core'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { afterEach, describe, expect, it } from 'vitest'
import { socketDetail } from '../../conformance/test/support/socket-detail.js'
import { relayPerTest, type TestRelay } from './helpers.js'

const relays = relayPerTest()
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
})

/** A listener on 127.0.0.1 counting accepted TCP connections: raw TCP, or HTTPS with `tls`. */
async function listener(tls?: { cert: string; key: string }) {
  const state = { connections: 0 }
  const server: net.Server = tls
    ? https.createServer(tls, (_req, res) => res.end('{}'))
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
    const relay = await relays.start({ allowPrivate: [] })
    const open = await listener()
    const closed = await closedPort()
    const subscribe = async (url: string) => {
      const bob = await fixtureAgent()
      const res = await relay.client.request('POST', '/relay/subscribe', {
        as: bob,
        body: { subscribe: { agent: bob.id }, push: { mode: 'webhook', url } },
      })
      return { status: res.status, body: await res.text() }
    }
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

  it('a webhook at a closed port, a plain TCP port, an untrusted TLS server: one 400 without detail', async () => {
    const relay = await relays.start()
    const plain = await listener()
    const stranger = await listener(await createDevCertificate())
    const bodies = new Set<string>()
    for (const port of [await closedPort(), plain.port, stranger.port]) {
      const bob = await fixtureAgent()
      const res = await relay.client.request('POST', '/relay/subscribe', {
        as: bob,
        body: {
          subscribe: { agent: bob.id },
          push: { mode: 'webhook', url: `https://127.0.0.1:${port}/hook` },
        },
      })
      expect(res.status).toBe(400)
      const text = await res.text()
      expect(socketDetail(text)).toBeUndefined()
      bodies.add(text.replaceAll(String(port), 'P'))
    }
    expect(bodies.size).toBe(1)
  })
})
