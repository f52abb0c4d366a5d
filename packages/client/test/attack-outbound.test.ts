/**
 * Attack: strangers make a default `createNodeAgent` (no network options)
 * fetch URLs they chose. PROFILE §4: the agent uses the address policy by default, so a message
 * "from" a loopback URL agent, or a did:key message whose signed `from.relays` names an internal
 * service, makes it connect nowhere; and what the stranger gets back (the inbox's 401 body, an
 * error event of a reply that could not go out) says only that the request failed. Loopback
 * listeners count every TCP connection they accept.
 */
import https from 'node:https'
import type net from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { ed25519Signer, generateKeyPair, memoryStorage } from '@agentmsg/core'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { socketDetail } from '../../conformance/test/support/socket-detail.js'
import {
  type AgentErrorEvent,
  createAddressPolicy,
  createNodeAgent,
  type NodeAgent,
} from '../src/node.js'
import { freePort } from './helpers.js'

interface Listener {
  port: number
  connections: number
  requests: number
  close(): Promise<void>
}

/** An HTTPS server on 127.0.0.1 with the agent's own certificate, counting what reaches it. */
async function listener(tls: DevCertificate): Promise<Listener> {
  const state = { connections: 0, requests: 0 }
  const server = https.createServer({ cert: tls.cert, key: tls.key }, (_req, res) => {
    state.requests++
    res.end('{}')
  })
  server.on('connection', () => state.connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return Object.assign(state, {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  })
}

let tls: DevCertificate
let victim: NodeAgent
let internal: Listener
let attacker: typeof fetch
const errors: AgentErrorEvent[] = []

beforeAll(async () => {
  tls = await createDevCertificate()
  internal = await listener(tls)
  // What a user gets: no `ca`, no `addressPolicy`, no `fetch`.
  victim = await createNodeAgent({ storage: memoryStorage(), inbox: { tls } })
  victim.on('error', (e) => void errors.push(e))
  // The attacker reaches the victim's inbox on loopback (its own client, not the agent's).
  attacker = createNodeFetch({
    ca: tls.ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
  })
})
afterAll(async () => {
  await victim?.close()
  await internal?.close()
})

async function post(message: unknown): Promise<{ status: number; body: any }> {
  const res = await attacker(`${victim.inboxUrl}/.well-known/agentmsg/inbox`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(message),
  })
  return { status: res.status, body: await res.json() }
}

/** A message "from" the URL agent at `origin`, signed with a key only the attacker has. */
async function fromUrlAgent(origin: string) {
  const keys = await generateKeyPair()
  return signedMessage({ id: origin, signer: ed25519Signer(keys, `${origin}#k1`) }, victim.id)
}

describe('attack: a default createNodeAgent fetching what strangers chose', () => {
  it('a message "from" https://127.0.0.1:PORT: no connection; the 401 says only that it failed', async () => {
    const closed = await freePort()
    const answers: string[] = []
    for (const port of [internal.port, closed]) {
      for (const origin of [`https://127.0.0.1:${port}`, `https://[::1]:${port}`]) {
        const { status, body } = await post(await fromUrlAgent(origin))
        expect(status).toBe(401)
        expect(body).toMatchObject({ status: 'error', code: 'unknown_sender' })
        expect(body.message).toContain(`the identity document of ${origin} could not be fetched`)
        expect(socketDetail(body.message)).toBeUndefined()
        answers.push(body.message.replaceAll(String(port), 'PORT'))
      }
    }
    // Open port or closed, the stranger reads the same answer.
    expect(answers[2]).toBe(answers[0])
    expect(answers[3]).toBe(answers[1])
    expect(internal.connections).toBe(0)
  })

  it("a did:key stranger's from.relays naming an internal service: never POSTed to", async () => {
    const stranger = await fixtureAgent()
    const relays = [`https://127.0.0.1:${internal.port}/admin/api`]
    const replies: unknown[] = []
    const off = victim.on('message', async (m) => {
      // The application answers: the reply goes to the sender's signed relays.
      await victim.reply(m, 'pong').catch((e: unknown) => void replies.push(e))
    })
    try {
      // An ordinary request, which the application replies to…
      expect((await post(await signedMessage(stranger, victim.id, { relays }))).status).toBe(202)
      // …and one of an unknown phase, which the agent answers with an error phase message.
      const odd = await signedMessage(stranger, victim.id, { relays, phase: 'bogus' as never })
      expect((await post(odd)).status).toBe(202)

      await expect.poll(() => replies.length, { timeout: 10_000 }).toBe(1)
      const texts = () => errors.map((e) => String((e.error as Error).message))
      await expect
        .poll(texts, { timeout: 10_000 })
        .toContain(`an error reply to ${stranger.id} could not be delivered`)
      // The application's own reply fails at the policy (its error may say so: it is not the
      // stranger's to read).
      expect(String((replies[0] as Error).message)).toMatch(/not public unicast/)
      // The error event of the error reply (above) says only that it could not be delivered.
      for (const text of texts()) expect(socketDetail(text)).toBeUndefined()
      expect(internal.connections).toBe(0)
      expect(internal.requests).toBe(0)
    } finally {
      off()
    }
  })
})
