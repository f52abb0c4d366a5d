/**
 * Issue 9, item 4, against a real relay on loopback (PROFILE §9): one stranger closed a topic
 * for everyone — subscribe, fill their own mailbox, never acknowledge — and every later topic
 * publish got a 503 naming the subscriber. Now a topic publish is stored for every subscriber
 * whose mailbox has room and skips full ones (still 202).
 */
import { type FixtureAgent, fixtureAgent } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { clockedMessage, testClock } from './attack-relay-helpers.js'
import { relayPerTest, type TestRelay } from './helpers.js'

const { start } = relayPerTest()

const MiB = 1024 * 1024
const TOPIC = 'news/tech'

async function topicIds(relay: TestRelay, agent: FixtureAgent): Promise<string[]> {
  const ids: string[] = []
  let after = ''
  for (;;) {
    const page = await relay.client.retrieve(agent, after)
    if (page.messages.length === 0) return ids
    ids.push(...page.messages.map((m) => m.message_id))
    after = `&after=${page.cursor}`
  }
}

describe('attack: a subscriber that never reads closes a topic', () => {
  it('with the defaults: once the stranger’s mailbox is full, topic publishes still get 202 and reach the others', async () => {
    const clock = testClock()
    const relay = await start({ now: clock.now, clientNow: clock.now })
    const publisher = await fixtureAgent()
    const stranger = await fixtureAgent()
    const reader = await fixtureAgent()
    await relay.client.subscribe(stranger, {}, [TOPIC])
    await relay.client.subscribe(reader, {}, [TOPIC])
    // The stranger never acknowledges: its mailbox fills up to what the publisher may hold in
    // it (a quarter, 64 MiB). The reader acknowledges everything.
    let skipped = 0
    for (let i = 0; i < 80 && skipped < 3; i++) {
      clock.advance(2_000) // the per-sender limit refills; the quota is what is tested
      const before = (await relay.store.usage(stranger.id)).messages
      const msg = await clockedMessage(publisher, { topic: TOPIC }, clock, MiB - 8 * 1024)
      const res = await relay.client.publish(msg)
      expect(res.status).toBe(202)
      expect(await topicIds(relay, reader)).toEqual([msg.message_id])
      const ack = `/relay/messages/${encodeURIComponent(msg.message_id)}?agent=${encodeURIComponent(reader.id)}&from=${encodeURIComponent(publisher.id)}`
      expect((await relay.client.request('DELETE', ack, { as: reader })).status).toBe(204)
      if ((await relay.store.usage(stranger.id)).messages === before) skipped++
    }
    // The stranger's mailbox was full for the last publishes; the topic stayed open.
    expect(skipped).toBe(3)
    expect((await relay.store.usage(stranger.id, publisher.id)).bytes).toBeLessThanOrEqual(64 * MiB)
  }, 120_000)

  it('a stranger who fills their own mailbox and never acks: 202, the others get it, no 503 names anyone', async () => {
    const relay = await start({ quota: { messages: 8 } })
    const publisher = await fixtureAgent()
    const stranger = await fixtureAgent()
    const readers = [await fixtureAgent(), await fixtureAgent()]
    await relay.client.subscribe(stranger, {}, [TOPIC])
    for (const r of readers) await relay.client.subscribe(r, {}, [TOPIC])
    // The stranger fills its own mailbox from four of its own keys (each holds its quarter).
    for (let k = 0; k < 4; k++) {
      const key = await fixtureAgent()
      for (let i = 0; i < 2; i++) {
        const res = await relay.client.publish(await clockedMessage(key, stranger.id, testClock()))
        expect(res.status).toBe(202)
      }
    }
    const full = await relay.client.publish(
      await clockedMessage(await fixtureAgent(), stranger.id, testClock()),
    )
    expect(full.status).toBe(503)
    expect(await full.text()).not.toContain(stranger.id)
    const held = await relay.store.usage(stranger.id)
    expect(held.messages).toBe(8)
    // Topic publishes (two: the publisher's share of a reader's mailbox of 8): accepted, stored
    // for the readers, skipped for the stranger.
    const sent: string[] = []
    for (let i = 0; i < 2; i++) {
      const msg = await clockedMessage(publisher, { topic: TOPIC }, testClock())
      const res = await relay.client.publish(msg)
      expect(res.status).toBe(202)
      const body = await res.text()
      expect(body).not.toContain(stranger.id)
      expect(JSON.parse(body)).toEqual({ status: 'accepted', message_id: msg.message_id })
      sent.push(msg.message_id)
    }
    for (const r of readers) expect(await topicIds(relay, r)).toEqual(sent)
    expect(await relay.store.usage(stranger.id)).toEqual(held)
    expect(await topicIds(relay, stranger)).not.toContain(sent[0])
  })
})
