/**
 * An agent whose relays are not all up (PROFILE §9 client failover), against real relays over
 * HTTPS on 127.0.0.1 with a development CA: `createNodeAgent` starts with one relay down,
 * reports it by URL, receives through the live one and connects to the other once it comes up
 * on its port; a relay that refuses the agent fails start-up instead. Also the Node agent's
 * own WebSocket (`mode: 'ws'`), which trusts `ca` and obeys the address policy.
 */

import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { memoryRelayStore, type RelayServer, serveRelay } from '@agentmsg/relay'
import { RelayError } from '@agentmsg/transport-relay'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Agent, ReceivedMessage } from '../src/index.js'
import {
  type AddressPolicy,
  createAddressPolicy,
  createNodeAgent,
  type NodeAgentOptions,
} from '../src/node.js'
import { nodeWebSocket } from '../src/node-websocket.js'
import { collect, freePort, removeTempDirs, sleep, tempDir } from './helpers.js'

let cert: DevCertificate
const loopback: AddressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
const cleanups: Array<() => Promise<unknown>> = []

beforeAll(async () => {
  cert = await createDevCertificate()
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})
afterAll(removeTempDirs)

/** A relay on `port`; `allowPrivate` lets it fetch identity documents from loopback. */
async function relayOn(port = 0, allowPrivate = ['127.0.0.1']): Promise<RelayServer> {
  const relay = await serveRelay({
    port,
    dataDir: await tempDir(),
    tls: { cert: cert.cert, key: cert.key },
    allowPrivate,
    ca: cert.ca,
    store: memoryRelayStore(),
    onError: () => {},
  })
  cleanups.push(() => relay.close())
  return relay
}

/** A Node agent on the loopback network, trusting the development CA. */
async function agent(options: Omit<NodeAgentOptions, 'ca' | 'addressPolicy'>): Promise<Agent> {
  const a = await createNodeAgent({ ...options, ca: cert.ca, addressPolicy: loopback })
  cleanups.push(() => a.close())
  return a
}

/** Resolves with the next message the agent receives. */
const nextMessage = (a: Agent) =>
  new Promise<ReceivedMessage>((resolve) => {
    const off = a.on('message', (m) => {
      off()
      resolve(m)
    })
  })

/** Poll until `check` passes (the test's own timeout bounds it; nothing is asserted on time). */
async function until<T>(check: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    await sleep(25)
  }
}

describe('createNodeAgent with relays down', () => {
  it('starts, reports the dead relay by URL, receives through the live one, connects when it is up', async () => {
    const live = await relayOn()
    const deadPort = await freePort()
    const deadUrl = `https://127.0.0.1:${deadPort}`
    const bob = await agent({ relays: [deadUrl, live.url] })
    const errors = collect(bob, 'error')
    const alice = await agent({ sendOnly: true })

    // The dead relay is reported as an `error` event naming it, with the code of a relay down.
    const reported = await until(async () =>
      errors.seen.map((e) => e.error).find((e) => e instanceof RelayError),
    )
    expect(reported).toMatchObject({ code: 'unavailable', relayUrl: deadUrl })
    expect((reported as Error).message).toContain(deadUrl)
    expect(errors.seen.find((e) => e.error === reported)?.transport).toBe('relay')

    // Messages flow through the live relay meanwhile.
    const first = nextMessage(bob)
    const sent = await alice.send(bob.id, 'through the live relay', { relays: [live.url] })
    expect(sent.relayUrl).toBe(live.url)
    expect((await first).text).toBe('through the live relay')

    // The relay comes up on its port: bob reconnects and opens its mailbox there, and receives
    // what goes through it. Carol knows no other relay of bob's. (Polling with publishes would
    // run into the relay's per-sender limit: 429.)
    const back = await relayOn(deadPort)
    expect(back.url).toBe(deadUrl)
    await until(async () => (back.handler.openStreams(bob.id) === 1 ? true : undefined))
    const carol = await agent({ sendOnly: true })
    const second = nextMessage(bob)
    const viaBack = await carol.send(bob.id, 'through the relay that came up', {
      relays: [deadUrl],
      route: 'relay',
    })
    expect(viaBack.relayUrl).toBe(deadUrl)
    expect((await second).text).toBe('through the relay that came up')
    expect(back.handler.openStreams(bob.id)).toBe(1)
  })

  it('a relay that refuses the agent fails start-up, naming the relay and its code', async () => {
    const live = await relayOn()
    // This relay may not fetch from loopback (PROFILE §4), so it cannot find the URL agent's
    // identity document: it answers 401 unknown_sender, and no retry changes that.
    const refusing = await relayOn(0, [])
    const port = await freePort()
    const agentId = `https://127.0.0.1:${port}`
    const start = createNodeAgent({
      identity: { agentId },
      inbox: { port, tls: { cert: cert.cert, key: cert.key } },
      relays: [live.url, refusing.url],
      ca: cert.ca,
      addressPolicy: loopback,
    })
    const error = await start.then(
      (a) => a.close(),
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toMatchObject({ code: 'unknown_sender', relayUrl: refusing.url })
    expect((error as Error).message).toContain(refusing.url)
    // The relay that took the agent (it could fetch the document) is left by the failed start.
    await until(async () => (live.handler.openStreams(agentId) === 0 ? true : undefined))
    // …and the agent's inbox is closed: its port is free again.
    const again = await relayOn(port)
    expect(again.url).toBe(agentId)
  })
})

describe("createNodeAgent({ ca, mode: 'ws' })", () => {
  it('streams over a WebSocket that trusts the CA it was given', async () => {
    const relay = await relayOn()
    const bob = await agent({ relays: [relay.url], mode: 'ws' })
    const alice = await agent({ sendOnly: true })
    const got = nextMessage(bob)
    await alice.send(bob.id, 'over a WebSocket', { relays: [relay.url] })
    expect((await got).text).toBe('over a WebSocket')
    expect(relay.handler.openStreams(bob.id)).toBe(1)
  })

  it('its WebSocket obeys the address policy: IP literals before dialling, names as resolved', async () => {
    const relay = await relayOn()
    const publicOnly = nodeWebSocket({ ca: cert.ca, addressPolicy: createAddressPolicy() })
    const port = new URL(relay.url).port
    expect(() => new publicOnly(`wss://127.0.0.1:${port}/relay/ws`)).toThrow(
      expect.objectContaining({ code: 'forbidden' }),
    )
    const named = new publicOnly(`wss://localhost:${port}/relay/ws`)
    const failure = await new Promise<unknown>((resolve) =>
      named.addEventListener('error', (event) => resolve(event.error ?? event)),
    )
    expect(failure).toMatchObject({ code: 'forbidden' })
    // The same relay through the loopback policy: the handshake completes (the CA is trusted).
    const allowed = new (nodeWebSocket({ ca: cert.ca, addressPolicy: loopback }))(
      `wss://127.0.0.1:${port}/relay/ws`,
    )
    const first = await new Promise<unknown>((resolve, reject) => {
      allowed.addEventListener('message', (event) => resolve(event.data))
      allowed.addEventListener('error', (event) => reject(event.error))
    })
    expect(JSON.parse(String(first))).toMatchObject({ type: 'challenge' })
    allowed.close()
  })
})
