/**
 * Issue 9, item 11, against a real relay on loopback with its defaults (PROFILE §9): a replayed
 * genuine message spent the real sender's per-sender quota, and after an ack the same signed
 * message was stored and delivered again. Now a duplicate is answered 202 before the per-sender
 * limit is charged, and (mailbox, from, message_id) is remembered after the ack.
 *
 * The clock stands still, so no token of the per-sender limit (60 a minute, burst 20) comes
 * back during the test: every token spent is visible.
 */
import { fixtureAgent } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { clockedMessage, publishFrom, testClock } from './attack-relay-helpers.js'
import { relayPerTest, sseReader } from './helpers.js'

const { start } = relayPerTest()

describe('attack: replaying someone’s message', () => {
  it('100 replays from other addresses do not spend the real sender’s per-sender quota', async () => {
    const clock = testClock()
    const relay = await start({ now: clock.now, clientNow: clock.now })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await relay.client.subscribe(bob)
    const genuine = await clockedMessage(alice, bob.id, clock)
    expect((await relay.client.publish(genuine)).status).toBe(202)
    // The attacker replays it from two addresses of its own (50 each, within their burst).
    for (let i = 0; i < 100; i++) {
      const reply = await publishFrom(relay.url, relay.cert.ca, genuine, `127.0.0.${2 + (i % 2)}`)
      expect(reply.status).toBe(202)
      expect(reply.body).toEqual({ status: 'accepted', message_id: genuine.message_id })
    }
    // Alice's next messages are all accepted: her burst of 20 is intact but for the genuine one.
    const next: string[] = []
    for (let i = 0; i < 19; i++) {
      const msg = await clockedMessage(alice, bob.id, clock)
      expect((await relay.client.publish(msg)).status).toBe(202)
      next.push(msg.message_id)
    }
    // …and the 21st is what the limit refuses: the replays were charged nothing.
    const limited = await relay.client.publish(await clockedMessage(alice, bob.id, clock))
    expect(limited.status).toBe(429)
    const page = await relay.client.retrieve(bob)
    expect(page.messages.map((m) => m.message_id)).toEqual([genuine.message_id, ...next])
  })

  it('after an ack, the same signed message again gets 202 and is not delivered again', async () => {
    const relay = await start({ heartbeatMs: 100 })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await relay.client.subscribe(bob)
    const msg = await clockedMessage(alice, bob.id, testClock())
    expect((await relay.client.publish(msg)).status).toBe(202)
    const first = await relay.client.retrieve(bob)
    expect(first.messages.map((m) => m.message_id)).toEqual([msg.message_id])
    const ack = `/relay/messages/${encodeURIComponent(msg.message_id)}?agent=${encodeURIComponent(bob.id)}&from=${encodeURIComponent(alice.id)}`
    expect((await relay.client.request('DELETE', ack, { as: bob })).status).toBe(204)
    // Replayed, by anyone, any number of times.
    for (let i = 0; i < 5; i++) {
      expect((await relay.client.publish(msg)).status).toBe(202)
      const reply = await publishFrom(relay.url, relay.cert.ca, msg, '127.0.0.4')
      expect(reply.status).toBe(202)
    }
    // Nothing to retrieve, from the start or after the old cursor…
    expect((await relay.client.retrieve(bob)).messages).toEqual([])
    expect((await relay.client.retrieve(bob, `&after=${first.cursor}`)).messages).toEqual([])
    expect(await relay.store.usage(bob.id)).toEqual({ messages: 0, bytes: 0 })
    // …and nothing on a stream from the start: heartbeats only.
    const res = await relay.client.request(
      'GET',
      `/relay/stream?agent=${encodeURIComponent(bob.id)}`,
      { as: bob },
    )
    expect(res.status).toBe(200)
    const events = sseReader(res.body!)
    while (events.comments() < 3) expect(await events.readMore()).toBe(true)
    await events.cancel()
    // The next new message is delivered as usual.
    const fresh = await clockedMessage(alice, bob.id, testClock())
    expect((await relay.client.publish(fresh)).status).toBe(202)
    expect((await relay.client.retrieve(bob)).messages.map((m) => m.message_id)).toEqual([
      fresh.message_id,
    ])
  })

  it('a topic message every subscriber acknowledged is a duplicate: 202, delivered to nobody again', async () => {
    const relay = await start()
    const alice = await fixtureAgent()
    const subscribers = [await fixtureAgent(), await fixtureAgent()]
    for (const s of subscribers) await relay.client.subscribe(s, {}, ['news'])
    const msg = await clockedMessage(alice, { topic: 'news' }, testClock())
    expect((await relay.client.publish(msg)).status).toBe(202)
    for (const s of subscribers) {
      const body = { agent: s.id, acks: [{ message_id: msg.message_id, from: alice.id }] }
      const res = await relay.client.request('POST', '/relay/ack', { as: s, body })
      expect(await res.json()).toEqual({ status: 'acknowledged', removed: 1 })
    }
    expect((await relay.client.publish(msg)).status).toBe(202)
    for (const s of subscribers) expect((await relay.client.retrieve(s)).messages).toEqual([])
    // A subscriber that joined since gets it (it was never stored for them); the others do not.
    const late = await fixtureAgent()
    await relay.client.subscribe(late, {}, ['news'])
    expect((await relay.client.publish(msg)).status).toBe(202)
    expect((await relay.client.retrieve(late)).messages.map((m) => m.message_id)).toEqual([
      msg.message_id,
    ])
    for (const s of subscribers) expect((await relay.client.retrieve(s)).messages).toEqual([])
  })
})
