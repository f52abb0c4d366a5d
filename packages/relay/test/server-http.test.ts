/** The relay's HTTP endpoints over real HTTPS (PROFILE §9). */

import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { createKeyResolver } from '@agentmsg/core/identity'
import { verifyMessage } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { memoryRelayStore } from '../src/store/memory.js'
import { aliceAndBob, relayPerTest } from './helpers.js'

const { start } = relayPerTest()

describe('publish → retrieve → ack', () => {
  it('stores for a subscribed mailbox, serves it, and deletes on ack', async () => {
    const relay = await start()
    const { client, alice, bob } = await aliceAndBob(relay)

    const msg = await signedMessage(alice, bob.id)
    const res = await client.publish(msg)
    expect(res.status).toBe(202)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(await res.json()).toEqual({ status: 'accepted', message_id: msg.message_id })

    // The same message again: accepted, stored once.
    expect((await client.publish(msg)).status).toBe(202)

    const page = await client.retrieve(bob)
    expect(page.messages).toHaveLength(1)
    const got = page.messages[0]!
    expect(got.message_id).toBe(msg.message_id)
    expect(typeof page.cursor).toBe('string')

    // Trace appended by the relay; the sender's signature still verifies.
    expect(got.trace?.received).toEqual([
      {
        by: `relay:${relay.url}`,
        with: 'https/agentmsg-1',
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        from: alice.id,
      },
    ])
    const verdict = await verifyMessage(got, createKeyResolver())
    expect(verdict.alg).toBe('ed25519')

    // Nothing after the cursor.
    expect((await client.retrieve(bob, `&after=${page.cursor}`)).messages).toEqual([])

    const ackPath = `/relay/messages/${encodeURIComponent(msg.message_id)}?agent=${encodeURIComponent(bob.id)}&from=${encodeURIComponent(alice.id)}`
    const ack = await client.request('DELETE', ackPath, { as: bob })
    expect(ack.status).toBe(204)
    expect((await client.retrieve(bob)).messages).toEqual([])
    // Acknowledging again: nothing matches.
    expect((await client.request('DELETE', ackPath, { as: bob })).status).toBe(404)
  })

  it('acknowledges many with POST /relay/ack, skipping entries that match nothing', async () => {
    const relay = await start()
    const { client, alice, bob } = await aliceAndBob(relay)
    const msgs = [await signedMessage(alice, bob.id), await signedMessage(alice, bob.id)]
    for (const m of msgs) expect((await client.publish(m)).status).toBe(202)
    const acks = [
      ...msgs.map((m) => ({ message_id: m.message_id, from: alice.id })),
      { message_id: 'nothing-here', from: alice.id },
    ]
    const ack = (body: unknown, as = bob) =>
      client.request('POST', '/relay/ack', { as, body: body as Record<string, unknown> })
    // Another agent's mailbox: 403, nothing removed.
    expect((await ack({ agent: bob.id, acks }, alice)).status).toBe(403)
    for (const bad of [
      { agent: bob.id, acks: [] },
      { agent: bob.id },
      { agent: bob.id, acks: [{}] },
    ]) {
      const r = await ack(bad)
      expect(r.status).toBe(400)
      expect((await r.json()).code).toBe('invalid_format')
    }
    const tooMany = Array.from({ length: 501 }, (_, i) => ({ message_id: `m${i}`, from: alice.id }))
    expect((await ack({ agent: bob.id, acks: tooMany })).status).toBe(400)
    expect((await client.retrieve(bob)).messages).toHaveLength(2)
    const r = await ack({ agent: bob.id, acks })
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ status: 'acknowledged', removed: 2 })
    expect((await client.retrieve(bob)).messages).toEqual([])
    expect((await ack({ agent: bob.id, acks })).status).toBe(200)
  })

  it('pages with limit and clamps it to 500', async () => {
    const relay = await start()
    const { client, alice, bob } = await aliceAndBob(relay)
    for (let i = 0; i < 3; i++) {
      expect((await client.publish(await signedMessage(alice, bob.id))).status).toBe(202)
    }
    const first = await client.retrieve(bob, '&limit=2')
    expect(first.messages).toHaveLength(2)
    const second = await client.retrieve(bob, `&limit=2&after=${first.cursor}`)
    expect(second.messages).toHaveLength(1)
    expect((await client.retrieve(bob, '&limit=100000')).messages).toHaveLength(3)
    const bad = await client.request(
      'GET',
      `/relay/messages?agent=${encodeURIComponent(bob.id)}&limit=0`,
      { as: bob },
    )
    expect(bad.status).toBe(400)
  })

  it('gives an owner with no mailbox an empty list', async () => {
    const relay = await start()
    const carol = await fixtureAgent()
    expect(await relay.client.retrieve(carol)).toEqual({ messages: [], cursor: null })
  })
})

describe('mailboxes', () => {
  it('answers 404 for a mailbox nobody subscribed, only after the signature verified', async () => {
    const relay = await start()
    const alice = await fixtureAgent()
    const nobody = await fixtureAgent()
    const msg = await signedMessage(alice, nobody.id)
    const res = await relay.client.publish(msg)
    expect(res.status).toBe(404)
    expect((await res.json()).code).toBe('not_found')
    // Badly signed → 401, not 404.
    const forged = structuredClone(msg)
    forged.body = { parts: [{ type: 'text', text: 'changed' }] } as never
    const bad = await relay.client.publish(forged)
    expect(bad.status).toBe(401)
    expect((await bad.json()).code).toBe('invalid_signature')
    // A name agent never has a mailbox.
    const named = await signedMessage(alice, 'bob')
    expect((await relay.client.publish(named)).status).toBe(404)
  })

  it('closes the mailbox when the last subscription is deleted, keeping what it holds', async () => {
    const relay = await start()
    const { client } = relay
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const id = await client.subscribe(bob)
    expect((await client.publish(await signedMessage(alice, bob.id))).status).toBe(202)
    // Another agent may not delete it.
    expect((await client.request('DELETE', `/relay/subscribe/${id}`, { as: alice })).status).toBe(
      403,
    )
    expect((await client.request('DELETE', `/relay/subscribe/${id}`, { as: bob })).status).toBe(204)
    expect((await client.request('DELETE', `/relay/subscribe/${id}`, { as: bob })).status).toBe(404)
    expect((await client.publish(await signedMessage(alice, bob.id))).status).toBe(404)
    expect((await client.retrieve(bob)).messages).toHaveLength(1)
  })

  it('answers 503 with Retry-After when the mailbox is full', async () => {
    // One sender may fill this mailbox alone: the mailbox quota is what is tested here.
    const relay = await start({ quota: { messages: 2, senderMessages: 2 } })
    const { client, alice, bob } = await aliceAndBob(relay)
    for (let i = 0; i < 2; i++) {
      expect((await client.publish(await signedMessage(alice, bob.id))).status).toBe(202)
    }
    const full = await client.publish(await signedMessage(alice, bob.id))
    expect(full.status).toBe(503)
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    const body = await full.json()
    expect(body.code).toBe('unavailable')
    // The error never names a mailbox or its owner (PROFILE §9).
    expect(body.message).not.toContain(bob.id)
  })

  it('fans a topic message out to every subscriber, stored once', async () => {
    const store = memoryRelayStore()
    const relay = await start({ store })
    const { client } = relay
    const alice = await fixtureAgent()
    const subs = await Promise.all([fixtureAgent(), fixtureAgent(), fixtureAgent()])
    for (const s of subs) await client.subscribe(s, {}, ['news/tech'])
    const msg = await signedMessage(alice, { topic: 'news/tech' })
    expect((await client.publish(msg)).status).toBe(202)
    for (const s of subs) {
      const page = await client.retrieve(s)
      expect(page.messages.map((m) => m.message_id)).toEqual([msg.message_id])
    }
    expect(store.storedMessages()).toBe(1)
    // A topic nobody follows: accepted, nothing stored.
    expect((await client.publish(await signedMessage(alice, { topic: 'quiet' }))).status).toBe(202)
    expect(store.storedMessages()).toBe(1)
  })
})

describe('publish pipeline', () => {
  it('refuses a non-empty trace, bad content types, methods and sizes', async () => {
    const relay = await start()
    const { client, alice, bob } = await aliceAndBob(relay)
    const msg = await signedMessage(alice, bob.id)
    const traced = {
      ...msg,
      trace: {
        received: [
          { by: 'relay:https://x.example', with: 'https/agentmsg-1', at: msg.date, from: alice.id },
        ],
      },
    }
    const t = await client.publish(traced)
    expect(t.status).toBe(400)
    expect((await t.json()).code).toBe('invalid_format')

    const ct = await client.request('POST', '/relay/publish', {
      body: JSON.stringify(msg),
      headers: { 'content-type': 'text/plain' },
    })
    expect(ct.status).toBe(415)
    const m = await client.request('GET', '/relay/publish')
    expect(m.status).toBe(405)
    expect(m.headers.get('allow')).toBe('POST, OPTIONS')
    const big = await client.request('POST', '/relay/publish', { body: 'x'.repeat(1_200_000) })
    expect(big.status).toBe(413)
    const junk = await client.request('POST', '/relay/publish', { body: '{"a":1,"a":2}' })
    expect(junk.status).toBe(400)
    const stale = await signedMessage(alice, bob.id, { date: Date.now() - 9 * 86_400_000 })
    const s = await client.publish(stale)
    expect(s.status).toBe(400)
    expect((await s.json()).code).toBe('stale_message')
    const unsigned = { ...msg, security: { signatures: [] } }
    const u = await client.publish(unsigned)
    expect(u.status).toBe(401)
  })

  it('refuses a non-empty trace with 400 even when the signature is bad too', async () => {
    const relay = await start()
    const { alice, bob } = await aliceAndBob(relay)
    const msg = await signedMessage(alice, bob.id)
    const entry = { by: 'relay:https://x.example', with: 'https/agentmsg-1', at: msg.date }
    const forged = {
      ...msg,
      body: { parts: [{ type: 'text', text: 'tampered' }] },
      trace: { received: [{ ...entry, from: alice.id }] },
    }
    const r = await relay.client.publish(forged)
    expect(r.status).toBe(400)
    expect((await r.json()).code).toBe('invalid_format')
    expect((await relay.client.retrieve(bob)).messages).toHaveLength(0)
  })

  it('answers CORS preflights and unknown paths', async () => {
    const relay = await start()
    const pre = await relay.client.request('OPTIONS', '/relay/messages')
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('*')
    expect(pre.headers.get('access-control-allow-methods')).toBe('GET, OPTIONS')
    expect(pre.headers.get('access-control-allow-headers')).toContain('Last-Event-ID')
    expect(pre.headers.get('access-control-expose-headers')).toBe('Retry-After')
    expect((await relay.client.request('GET', '/nope')).status).toBe(404)
  })

  it('limits per sender after verification', async () => {
    const relay = await start({ limits: { perSender: { perMinute: 1, burst: 2 } } })
    const { client, alice, bob } = await aliceAndBob(relay)
    expect((await client.publish(await signedMessage(alice, bob.id))).status).toBe(202)
    expect((await client.publish(await signedMessage(alice, bob.id))).status).toBe(202)
    const limited = await client.publish(await signedMessage(alice, bob.id))
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  })
})

describe('agent auth', () => {
  it('refuses missing, foreign, replayed and stale signatures', async () => {
    const relay = await start()
    const { client } = relay
    const bob = await fixtureAgent()
    const mallory = await fixtureAgent()
    await client.subscribe(bob)
    const path = `/relay/messages?agent=${encodeURIComponent(bob.id)}`

    const none = await client.request('GET', path)
    expect(none.status).toBe(401)
    expect((await none.json()).code).toBe('unauthorized')

    const foreign = await client.request('GET', path, { as: mallory })
    expect(foreign.status).toBe(403)
    expect((await foreign.json()).code).toBe('forbidden')

    const nonce = 'n'.repeat(22) + 'AAAA'
    expect((await client.request('GET', path, { as: bob, nonce })).status).toBe(200)
    const replay = await client.request('GET', path, { as: bob, nonce })
    expect(replay.status).toBe(401)
    expect((await replay.json()).code).toBe('invalid_signature')

    const stale = await client.request('GET', path, {
      as: bob,
      created: Math.floor(Date.now() / 1000) - 600,
    })
    expect(stale.status).toBe(401)
    expect((await stale.json()).code).toBe('invalid_signature')

    // Subscribing for another agent.
    const sub = await client.request('POST', '/relay/subscribe', {
      as: mallory,
      body: { subscribe: { agent: bob.id } },
    })
    expect(sub.status).toBe(403)
    // Only did:key and URL agents have mailboxes.
    const named = await client.request('POST', '/relay/subscribe', {
      as: bob,
      body: { subscribe: { agent: 'bob' } },
    })
    expect(named.status).toBe(400)
  })
})

describe('expiry', () => {
  it('drops a message at its TTL and at the end of retention', async () => {
    let now = Date.now()
    const clock = () => now
    const store = memoryRelayStore()
    const relay = await start({ store, now: clock, clientNow: clock })
    const { client, alice, bob } = await aliceAndBob(relay)
    const short = await signedMessage(alice, bob.id, { ttlSeconds: 60, date: now })
    const long = await signedMessage(alice, bob.id, { date: now })
    expect((await client.publish(short)).status).toBe(202)
    expect((await client.publish(long)).status).toBe(202)
    expect((await client.retrieve(bob)).messages).toHaveLength(2)

    now += 61_000
    expect((await client.retrieve(bob)).messages.map((m) => m.message_id)).toEqual([
      long.message_id,
    ])

    now += 7 * 86_400_000
    expect((await client.retrieve(bob)).messages).toEqual([])
    // And the periodic sweep deletes them for good.
    await store.expire(now)
    expect((await store.usage(bob.id)).messages).toBe(0)

    // An expired message is refused at publish.
    const expired = await signedMessage(
      alice,
      bob.id,
      { ttlSeconds: 1, date: now - 5_000 },
      { created: now - 5_000 },
    )
    const res = await client.publish(expired)
    expect(res.status).toBe(400)
    expect((await res.json()).code).toBe('stale_message')
  })

  it('refuses a retention below 7 days', async () => {
    await expect(start({ retentionMs: 86_400_000 })).rejects.toThrow(RangeError)
  })
})
