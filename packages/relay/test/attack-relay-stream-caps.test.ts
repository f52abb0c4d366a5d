/**
 * PROFILE §9 "Streams per client address, and their memory", against a real relay on loopback
 * (SQLite, or PostgreSQL in the project `relay-on-postgres`): at most 64 open streams per
 * client address bucket whatever their agents (beyond → 429, a WebSocket 1013), while another
 * address still opens; a stream whose client takes nothing while data waits is closed after
 * the stall timeout; past the relay-wide unsent bound new streams get 503 with Retry-After
 * while open ones go on. Clients bind to 127.0.0.1 or 127.0.0.2: two client addresses.
 */
import { type FixtureAgent, fixtureAgent } from '@agentmsg/conformance'
import { PROFILE } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { clockedMessage, testClock } from './attack-relay-helpers.js'
import { relayPerTest, type TestRelay, until } from './helpers.js'
import { type StreamOutcome, sseFrom, wsFrom } from './stream-clients.js'

const { start, defer } = relayPerTest()

const MiB = 1024 * 1024
const TOPIC = 'caps/streams'
/** Enough requests from one address for the test (the request rate is not what is tested). */
const limits = { perAddress: { perMinute: 60_000, burst: 1000 } }

/** `count` agents subscribed to TOPIC, and `messages` topic messages of `bytes` for them. */
async function subscribers(relay: TestRelay, count: number, messages: number, bytes?: number) {
  const agents: FixtureAgent[] = []
  for (let i = 0; i < count; i++) {
    agents.push(await fixtureAgent())
    await relay.client.subscribe(agents[i]!, {}, [TOPIC])
  }
  const alice = await fixtureAgent()
  for (let i = 0; i < messages; i++) {
    const msg = await clockedMessage(alice, { topic: TOPIC }, testClock(), bytes)
    expect((await relay.client.publish(msg)).status).toBe(202)
  }
  return agents
}

type Open = (agent: FixtureAgent, from?: string) => Promise<StreamOutcome>
const sse = (relay: TestRelay): Open => {
  return (agent, from) => sseFrom(relay.url, relay.cert.ca, agent, from)
}
const ws =
  (relay: TestRelay): Open =>
  (agent, from) =>
    wsFrom(relay.url, relay.cert.ca, agent, from)

/** Open `open(agent)` and end it after the test. */
async function opened(open: Open, agent: FixtureAgent, from?: string): Promise<StreamOutcome> {
  const o = await open(agent, from)
  defer(() => o.end())
  return o
}

describe('attack: open streams per client address', () => {
  for (const [kind, make, refused] of [
    ['SSE', sse, 429],
    ['WebSocket', ws, 1013],
  ] as const) {
    it(`the 65th ${kind} stream from one address is refused (${refused}); another address still opens`, async () => {
      const relay = await start({ limits })
      const open = make(relay)
      // 17 agents: the per-agent cap (4) is not what refuses the 65th.
      const agents = await subscribers(relay, 17, 1)
      const streams: StreamOutcome[] = []
      for (let i = 0; i < PROFILE.streamsPerAddress; i++) {
        streams.push(await opened(open, agents[Math.floor(i / 4)]!))
      }
      expect(streams.map((s) => s.status)).toEqual(streams.map(() => 200))
      const last = agents[16]!
      const over = await opened(open, last)
      expect(over.status).toBe(refused)
      expect(over.code).toBe('rate_limited')
      if (kind === 'SSE') expect(Number(over.retryAfter)).toBeGreaterThanOrEqual(1)
      expect(relay.handler.openStreams()).toBe(64)
      // Another client address, the same agent: opens.
      expect((await opened(open, last, '127.0.0.2')).status).toBe(200)
      // A stream of the first address ends: its place is free again.
      streams[0]!.end()
      await until(() => relay.handler.openStreams() === 64)
      expect((await opened(open, last)).status).toBe(200)
    }, 60_000)
  }
})

describe('attack: streams whose client takes nothing', () => {
  it('a stalled SSE stream and a stalled WebSocket are closed after the stall timeout', async () => {
    const stallTimeoutMs = 2_000
    const relay = await start({ limits, stallTimeoutMs })
    // 12 MiB waiting: more than the loopback socket buffers take.
    const [bob] = await subscribers(relay, 1, 12, MiB - 8192)
    const opened = Date.now()
    const streams = [await sse(relay)(bob!), await ws(relay)(bob!)]
    expect(streams.map((s) => s.status)).toEqual([200, 200])
    await until(() => relay.handler.openStreams() === 0, stallTimeoutMs + 30_000)
    const took = Date.now() - opened
    console.log(`stalled streams ended after ${took} ms (stall timeout ${stallTimeoutMs} ms)`)
    expect(took).toBeGreaterThanOrEqual(stallTimeoutMs)
    // Within the timeout and a wide margin (the default is PROFILE's 60 s: server-units).
    expect(took).toBeLessThan(stallTimeoutMs + 20_000)
    // The connections were cut: reading on, the clients get what the sockets held, not all 12.
    const received = await Promise.all(streams.map((s) => s.readToEnd()))
    for (const n of received) expect(n).toBeLessThan(12)
  }, 60_000)
})

describe('attack: unsent stream data relay-wide', () => {
  it('past the bound new streams get 503 with Retry-After, open ones go on', async () => {
    const relay = await start({ limits: { ...limits, maxUnsentBytes: 2 * MiB } })
    const agents = await subscribers(relay, 8, 12, MiB - 8192)
    const open = sse(relay)
    const streams: StreamOutcome[] = []
    let refused: StreamOutcome | undefined
    // Unread streams, each holding a page unsent once the socket buffers are full.
    for (let i = 0; i < 32 && refused === undefined; i++) {
      const o = await opened(open, agents[i % 8]!)
      if (o.status === 200) streams.push(o)
      else refused = o
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(refused?.status).toBe(503)
    expect(refused?.code).toBe('unavailable')
    expect(Number(refused?.retryAfter)).toBeGreaterThanOrEqual(1)
    expect(streams.length).toBeGreaterThanOrEqual(2)
    // A WebSocket is refused too, after authentication.
    const socket = await opened(ws(relay), agents[7]!)
    expect([socket.status, socket.code]).toEqual([1013, 'unavailable'])
    // An open stream goes on: its client reads its 12 messages.
    let seen = 0
    let tail = ''
    for await (const chunk of streams[0]!.body!) {
      const text = tail + String(chunk)
      seen += text.split('event: message').length - 1
      // Shorter than the marker: a marker split between chunks is counted once.
      tail = text.slice(-13)
      if (seen === 12) break
    }
    expect(seen).toBe(12)
    // The unread ones end: what they held is given back, and a new stream opens.
    for (const s of streams.slice(1)) s.end()
    await until(() => relay.handler.openStreams() <= 1)
    expect((await opened(open, agents[0]!)).status).toBe(200)
  }, 120_000)
})
