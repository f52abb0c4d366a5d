/**
 * Issue 14: the relay's Prometheus metrics. A real HTTPS relay on SQLite with its metrics
 * listener; a scripted mix of good and bad requests; then `/metrics` is scraped over HTTP and
 * every counter compared with what the script did. The relay's clock is a test clock that does
 * not move, so no rate-limit token refills mid-script.
 */
import { request as httpRequest } from 'node:http'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { signWsAuth } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { clockedMessage, publishFrom, testClock } from './attack-relay-helpers.js'
import { relayPerTest, sseReader, startRelay, type TestRelay, until } from './helpers.js'

const { start, defer } = relayPerTest()

/** Samples of a text exposition: `name{label="v",…}` → value (comments skipped). */
async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
  const samples = new Map<string, number>()
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const space = line.lastIndexOf(' ')
    samples.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return samples
}

/** A WebSocket of `agent`'s mailbox; resolves once `count` message frames arrived. */
function wsReceive(
  relay: TestRelay,
  agent: Awaited<ReturnType<typeof fixtureAgent>>,
  count: number,
) {
  const ws = new WebSocket(`${relay.url.replace(/^https/, 'wss')}/relay/ws`, { ca: relay.cert.ca })
  defer(() => ws.terminate())
  let got = 0
  return new Promise<WebSocket>((resolve, reject) => {
    ws.once('error', reject)
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { type: string; nonce?: string }
      if (frame.type === 'challenge') {
        signWsAuth({
          relayBaseUrl: relay.url,
          nonce: frame.nonce!,
          signer: agent.signer,
          agent: agent.id,
        }).then((auth) => ws.send(JSON.stringify(auth)), reject)
      } else if (frame.type === 'message' && ++got === count) resolve(ws)
    })
  })
}

describe('metrics', () => {
  it('counts a scripted mix of publishes, auth failures, rate limits, deliveries and streams', async () => {
    const clock = testClock()
    const r = await start({
      now: clock.now,
      metrics: { port: 0 },
      limits: { perSender: { perMinute: 1, burst: 4 }, perAddress: { perMinute: 1, burst: 40 } },
    })
    expect(r.metrics?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const dave = await fixtureAgent()
    await r.client.subscribe(bob)
    // Dave's mailbox exists but is closed: a publish to it is 404 (PROFILE §9).
    const daveSub = await r.client.subscribe(dave)
    expect(
      (await r.client.request('DELETE', `/relay/subscribe/${daveSub}`, { as: dave })).status,
    ).toBe(204)

    const status = async (message: unknown) => (await r.client.publish(message)).status
    // 3 accepted (alice: 4 sender tokens → 1), then the first again: a duplicate, not charged.
    const first = await clockedMessage(alice, bob.id, clock)
    expect(await status(first)).toBe(202)
    for (let i = 0; i < 2; i++)
      expect(await status(await clockedMessage(alice, bob.id, clock))).toBe(202)
    expect(await status(first)).toBe(202)
    // A signature by alice's key, but over another message; then a body that is not a message.
    const forged = await clockedMessage(alice, bob.id, clock)
    const other = await clockedMessage(alice, bob.id, clock)
    forged.security!.signatures[0]!.sig = other.security!.signatures[0]!.sig
    expect(await status(forged)).toBe(401)
    expect(await status({ not: 'a message' })).toBe(400)
    // A burst past alice's last token: 1 accepted, 2 refused by the per-sender limit.
    const burst = [] as number[]
    for (let i = 0; i < 3; i++) burst.push(await status(await clockedMessage(alice, bob.id, clock)))
    expect(burst).toEqual([202, 429, 429])
    expect(await status(await signedMessage(bob, dave.id, { date: clock.now() }))).toBe(404)
    // Another address bucket sends 42 bodies that are not messages: 40 refused 400, 2 by its rate.
    const junk: number[] = []
    for (let i = 0; i < 42; i++) {
      junk.push((await publishFrom(r.url, r.cert.ca, { junk: i }, '127.0.0.9')).status)
    }
    expect(junk.filter((s) => s === 400)).toHaveLength(40)
    expect(junk.slice(40)).toEqual([429, 429])

    // Agent auth: none, and alice's key for bob's mailbox.
    const mailbox = `/relay/messages?agent=${encodeURIComponent(bob.id)}`
    expect((await r.client.request('GET', mailbox)).status).toBe(401)
    expect((await r.client.request('GET', mailbox, { as: alice })).status).toBe(403)
    // Deliveries: 4 retrieved, 4 on an SSE stream, 4 on a WebSocket (both left open).
    const page = await r.client.retrieve(bob)
    expect(page.messages).toHaveLength(4)
    const sse = await r.client.request('GET', `/relay/stream?agent=${encodeURIComponent(bob.id)}`, {
      as: bob,
    })
    const events = sseReader(sse.body!)
    defer(() => events.cancel())
    for (let i = 0; i < 4; i++) expect((await events.next())?.event).toBe('message')
    await wsReceive(r, bob, 4)
    // One acknowledgement: a timed store write.
    const acked = `/relay/messages/${encodeURIComponent(first.message_id)}?agent=${encodeURIComponent(bob.id)}&from=${encodeURIComponent(alice.id)}`
    expect((await r.client.request('DELETE', acked, { as: bob })).status).toBe(204)
    // The HTTPS port serves no metrics.
    const onRelay = await r.client.request('GET', '/metrics')
    expect(onRelay.status).toBe(404)
    expect(await onRelay.text()).not.toContain('agentmsg_relay_')

    await until(() => r.handler.openStreams() === 2)
    const m = await scrape(r.metrics!.url)
    const expected: Record<string, number> = {
      'agentmsg_relay_publishes_total{code="accepted"}': 4,
      'agentmsg_relay_publishes_total{code="duplicate"}': 1,
      'agentmsg_relay_publishes_total{code="invalid_signature"}': 1,
      'agentmsg_relay_publishes_total{code="invalid_format"}': 41,
      'agentmsg_relay_publishes_total{code="rate_limited"}': 4,
      'agentmsg_relay_publishes_total{code="not_found"}': 1,
      'agentmsg_relay_rate_limited_total{scope="sender"}': 2,
      'agentmsg_relay_rate_limited_total{scope="address"}': 2,
      'agentmsg_relay_rate_limited_total{scope="reads"}': 0,
      'agentmsg_relay_rate_limited_total{scope="streams"}': 0,
      'agentmsg_relay_auth_failures_total{code="invalid_signature"}': 1,
      'agentmsg_relay_auth_failures_total{code="unauthorized"}': 1,
      'agentmsg_relay_auth_failures_total{code="forbidden"}': 1,
      'agentmsg_relay_deliveries_total{mode="retrieve"}': 4,
      'agentmsg_relay_deliveries_total{mode="sse"}': 4,
      'agentmsg_relay_deliveries_total{mode="ws"}': 4,
      'agentmsg_relay_deliveries_total{mode="webhook"}': 0,
      'agentmsg_relay_open_streams{kind="sse"}': 1,
      'agentmsg_relay_open_streams{kind="ws"}': 1,
      agentmsg_relay_mailboxes: 2,
      agentmsg_relay_stored_messages: 3,
      agentmsg_relay_stored_bytes: (await r.store.usage()).bytes,
      'agentmsg_relay_store_commit_seconds_count{op="publish"}': 4,
      'agentmsg_relay_store_commit_seconds_count{op="ack"}': 1,
    }
    expect(Object.fromEntries(Object.keys(expected).map((k) => [k, m.get(k)]))).toEqual(expected)
    expect(m.get('agentmsg_relay_stored_bytes')).toBeGreaterThan(0)
    // Only the PROFILE's codes and ours appear as label values.
    const codes = [...m.keys()].filter((k) => k.startsWith('agentmsg_relay_publishes_total'))
    expect(codes).toHaveLength(6)
  })

  it('listens on loopback only by default, and two relays keep their own counts', async () => {
    const r = await start({ metrics: { port: 0 } })
    expect(r.metrics?.host).toBe('127.0.0.1')
    // Bound to 127.0.0.1 itself: another loopback address has no listener there.
    const refused = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: '127.0.0.2', port: r.metrics!.port, path: '/metrics' })
      req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message))
      req.on('response', () => resolve('answered'))
      req.end()
    })
    expect(refused).toBe('ECONNREFUSED')
    const second = await startRelay({ metrics: { port: 0 } })
    defer(() => second.stop())
    const bob = await fixtureAgent()
    await second.client.subscribe(bob)
    expect((await second.client.publish(await signedMessage(bob, bob.id))).status).toBe(202)
    const accepted = 'agentmsg_relay_publishes_total{code="accepted"}'
    expect((await scrape(second.metrics!.url)).get(accepted)).toBe(1)
    expect((await scrape(r.metrics!.url)).get(accepted)).toBe(0)
    // Only GET /metrics.
    expect((await fetch(r.metrics!.url.replace('/metrics', '/'))).status).toBe(404)
  })
})
