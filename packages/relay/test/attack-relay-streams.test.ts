/**
 * Issue 9, items 7 and 18 (relay part), against a real relay on loopback with its defaults
 * (PROFILE §9): at most 4 open SSE or WebSocket streams per agent and 16 subscriptions per
 * agent; beyond → 429 `rate_limited` with Retry-After, a WebSocket closed after authentication
 * with 1013. 150 unread SSE streams on one's own mailbox (which took the relay from 368 to
 * 919 MiB) are refused past the 4th: the relay holds 4 stream buffers, measured in this process.
 */
import { type FixtureAgent, fixtureAgent } from '@agentmsg/conformance'
import { signWsAuth } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { clockedMessage, gc, testClock } from './attack-relay-helpers.js'
import { relayPerTest, type TestRelay, until } from './helpers.js'

const { start, defer } = relayPerTest()

const MiB = 1024 * 1024

function streamPath(agent: FixtureAgent): string {
  return `/relay/stream?agent=${encodeURIComponent(agent.id)}`
}

/** Open an SSE stream; the response (its body left unread). */
async function openSse(relay: TestRelay, agent: FixtureAgent): Promise<Response> {
  const res = await relay.client.request('GET', streamPath(agent), { as: agent })
  if (res.status === 200) defer(() => res.body?.cancel().catch(() => undefined))
  return res
}

async function expectStreamCap(res: Response): Promise<void> {
  expect(res.status).toBe(429)
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  const body = (await res.json()) as { code: string; message: string }
  expect(body.code).toBe('rate_limited')
  expect(body.message).toMatch(/streams/)
}

/** A WebSocket that authenticates as `agent`; resolves with its first frames and close code. */
function openWs(
  relay: TestRelay,
  agent: FixtureAgent,
): { ws: WebSocket; authed: Promise<void>; frames: unknown[]; closed: Promise<number> } {
  const ws = new WebSocket(`${relay.url.replace(/^https/, 'wss')}/relay/ws`, {
    ca: relay.cert.ca,
  })
  defer(() => ws.terminate())
  const frames: unknown[] = []
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)))
  const authed = new Promise<void>((resolve, reject) => {
    ws.once('error', reject)
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { type: string; nonce?: string }
      frames.push(frame)
      if (frame.type !== 'challenge') return
      signWsAuth({
        relayBaseUrl: relay.url,
        nonce: frame.nonce!,
        signer: agent.signer,
        agent: agent.id,
      }).then((auth) => {
        ws.send(JSON.stringify(auth))
        resolve()
      }, reject)
    })
  })
  return { ws, authed, frames, closed }
}

describe('attack: streams per agent', () => {
  it('a 5th SSE stream of one agent gets 429 rate_limited; a slot frees when a stream ends', async () => {
    const relay = await start()
    const bob = await fixtureAgent()
    await relay.client.subscribe(bob)
    const open = [await openSse(relay, bob)]
    for (let i = 0; i < 3; i++) open.push(await openSse(relay, bob))
    expect(open.map((r) => r.status)).toEqual([200, 200, 200, 200])
    expect(relay.handler.openStreams(bob.id)).toBe(4)
    await expectStreamCap(await openSse(relay, bob))
    // Another agent is not affected.
    const carol = await fixtureAgent()
    expect((await openSse(relay, carol)).status).toBe(200)
    // The client goes away: its slot is free again.
    await open[0]!.body!.cancel()
    await until(() => relay.handler.openStreams(bob.id) === 3)
    expect((await openSse(relay, bob)).status).toBe(200)
  })

  it('a 5th WebSocket of one agent is closed after authentication with 1013; SSE and WebSocket share the cap', async () => {
    const relay = await start()
    const bob = await fixtureAgent()
    await relay.client.subscribe(bob)
    const sockets = Array.from({ length: 4 }, () => openWs(relay, bob))
    await Promise.all(sockets.map((s) => s.authed))
    await until(() => relay.handler.openStreams(bob.id) === 4)
    const fifth = openWs(relay, bob)
    await fifth.authed
    expect(await fifth.closed).toBe(1013)
    expect(fifth.frames).toContainEqual(expect.objectContaining({ code: 'rate_limited' }))
    expect(relay.handler.openStreams(bob.id)).toBe(4)
    // With 4 WebSockets open, an SSE stream is refused too.
    await expectStreamCap(await openSse(relay, bob))
    sockets[0]!.ws.close()
    await until(() => relay.handler.openStreams(bob.id) === 3)
    expect((await openSse(relay, bob)).status).toBe(200)
  })

  it('150 unread SSE streams of one agent from one address: 4 are open, the relay holds 4 buffers', async () => {
    const clock = testClock()
    const relay = await start({ now: clock.now, clientNow: clock.now })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await relay.client.subscribe(bob)
    // A backlog of 12 MiB that every unread stream would try to hold.
    for (let i = 0; i < 12; i++) {
      const msg = await clockedMessage(alice, bob.id, clock, MiB - 2048)
      expect((await relay.client.publish(msg)).status).toBe(202)
    }
    gc()
    const before = process.memoryUsage().rss
    const statuses: number[] = []
    const refused: Response[] = []
    for (let batch = 0; batch < 3; batch++) {
      // The per-address limit (burst 100) refills: what refuses the rest is the stream cap.
      clock.advance(60_000)
      const replies = await Promise.all(Array.from({ length: 50 }, () => openSse(relay, bob)))
      for (const res of replies) {
        statuses.push(res.status)
        if (res.status !== 200) refused.push(res)
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(4)
    expect(refused).toHaveLength(146)
    for (const res of refused) await expectStreamCap(res)
    expect(relay.handler.openStreams()).toBe(4)
    // Let the open streams fill what they may hold, then measure.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    gc()
    const grown = (process.memoryUsage().rss - before) / MiB
    console.log(`150 unread SSE streams: 4 open, RSS +${grown.toFixed(1)} MiB`)
    // Without the cap this grew by ~900 MiB (150 streams, client and relay in this process);
    // with it ~65 MiB (4 streams, 150 TLS connections).
    expect(grown).toBeLessThan(160)
  }, 60_000)
})

describe('attack: subscriptions per agent', () => {
  it('the 17th subscription of one agent gets 429 rate_limited; deleting one makes room', async () => {
    const relay = await start()
    const bob = await fixtureAgent()
    const ids: string[] = []
    for (let i = 0; i < 16; i++) ids.push(await relay.client.subscribe(bob, {}, [`t${i}`]))
    const body = { subscribe: { agent: bob.id, topics: ['one-more'] } }
    const res = await relay.client.request('POST', '/relay/subscribe', { as: bob, body })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    const json = (await res.json()) as { code: string; message: string }
    expect(json.code).toBe('rate_limited')
    expect(json.message).toMatch(/subscriptions/)
    expect(await relay.store.subscriptions(bob.id)).toHaveLength(16)
    // Concurrent subscribes cannot pass the cap together either.
    const carol = await fixtureAgent()
    const burst = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        relay.client.request('POST', '/relay/subscribe', {
          as: carol,
          body: { subscribe: { agent: carol.id, topics: [`c${i}`] } },
        }),
      ),
    )
    expect(burst.filter((r) => r.status === 201)).toHaveLength(16)
    expect(burst.filter((r) => r.status === 429)).toHaveLength(4)
    expect(await relay.store.subscriptions(carol.id)).toHaveLength(16)
    const del = await relay.client.request('DELETE', `/relay/subscribe/${ids[0]}`, { as: bob })
    expect(del.status).toBe(204)
    expect((await relay.client.request('POST', '/relay/subscribe', { as: bob, body })).status).toBe(
      201,
    )
  })
})
