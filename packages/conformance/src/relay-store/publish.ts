/**
 * RelayStore contract: subscriptions, mailbox states, webhooks; publish; PROFILE §9 duplicates:
 * a (mailbox, from, message_id) is remembered until `forgetAt`.
 */
import { PROFILE } from '@agentmsg/core'
import { describe, expect } from 'vitest'
import { all, DAY, duplicate, expectIncreasing, ids, message, NOW, page } from './fixtures.js'
import type { RelayStoreSuite } from './suite.js'

/** The default window after receipt (8 days and 15 minutes). */
const DEFAULT_FORGET = NOW + PROFILE.relayForgetAfterReceiptMs

export function publishChecks(suite: RelayStoreSuite): void {
  const { test } = suite
  describe('subscriptions and mailbox states', () => {
    test('none → open → open (two) → closed when the last subscription is deleted → open again', async (s) => {
      expect(await s.mailboxState('alice')).toBe('none')
      const a = await s.subscribe({ agent: 'alice', topics: [], now: NOW })
      expect(await s.mailboxState('alice')).toBe('open')
      const b = await s.subscribe({ agent: 'alice', topics: ['news'], now: NOW + 1 })
      expect(a.id).not.toBe(b.id)
      expect(await s.unsubscribe(a.id, 'alice')).toBe(true)
      expect(await s.mailboxState('alice')).toBe('open')
      expect(await s.unsubscribe(b.id, 'alice')).toBe(true)
      expect(await s.mailboxState('alice')).toBe('closed')
      expect(await s.unsubscribe(b.id, 'alice')).toBe(false)
      await s.subscribe({ agent: 'alice', topics: [], now: NOW + 2 })
      expect(await s.mailboxState('alice')).toBe('open')
      expect(await s.mailboxState('bob')).toBe('none')
    })
    test('a closed mailbox keeps what it holds and can still be retrieved and acknowledged', async (s) => {
      const sub = await s.subscribe({ agent: 'alice', topics: [], now: NOW })
      const m = message(['alice'])
      await s.publish(m)
      await s.unsubscribe(sub.id, 'alice')
      expect(await s.mailboxState('alice')).toBe('closed')
      const held = await page(s, 'alice')
      expect(ids(held.entries)).toEqual([m.messageId])
      expect(held.entries[0]!.json).toBe(m.json)
      expect(await s.usage('alice')).toEqual({ messages: 1, bytes: m.bytes })
      expect(await s.ack('alice', m.messageId, m.from)).toBe(1)
      expect(await page(s, 'alice')).toEqual({ entries: [], cursor: undefined })
    })
    test("unsubscribe refuses another agent's subscription and unknown ids", async (s) => {
      const sub = await s.subscribe({ agent: 'alice', topics: ['t'], now: NOW })
      expect(await s.unsubscribe(sub.id, 'mallory')).toBe(false)
      expect(await s.unsubscribe('no-such-id', 'alice')).toBe(false)
      expect(await s.mailboxState('alice')).toBe('open')
      expect(await s.topicSubscribers('t')).toEqual(['alice'])
      expect(await s.mailboxState('mallory')).toBe('none')
    })
    test('subscriptions() lists all or one agent’s, with topics (no repeats) and created', async (s) => {
      const a = await s.subscribe({ agent: 'alice', topics: ['x', 'y', 'x'], now: NOW })
      const b = await s.subscribe({ agent: 'bob', topics: [], now: NOW + 5 })
      expect(a).toMatchObject({ agent: 'alice', topics: ['x', 'y'], created: NOW })
      expect(a.webhook).toBeUndefined()
      expect(typeof a.id).toBe('string')
      expect(a.id.length).toBeGreaterThanOrEqual(16)
      expect(await s.subscriptions()).toEqual([a, b])
      expect(await s.subscriptions('bob')).toEqual([b])
      expect(await s.subscriptions('carol')).toEqual([])
      await s.unsubscribe(a.id, 'alice')
      expect(await s.subscriptions()).toEqual([b])
    })
    test('topicSubscribers lists each agent once and follows unsubscribes', async (s) => {
      const a1 = await s.subscribe({ agent: 'alice', topics: ['news', 'sport'], now: NOW })
      const a2 = await s.subscribe({ agent: 'alice', topics: ['news'], now: NOW })
      const b = await s.subscribe({ agent: 'bob', topics: ['news'], now: NOW })
      await s.subscribe({ agent: 'carol', topics: ['weather'], now: NOW })
      expect((await s.topicSubscribers('news')).sort()).toEqual(['alice', 'bob'])
      expect(await s.topicSubscribers('sport')).toEqual(['alice'])
      expect(await s.topicSubscribers('nothing')).toEqual([])
      await s.unsubscribe(a1.id, 'alice')
      expect((await s.topicSubscribers('news')).sort()).toEqual(['alice', 'bob'])
      expect(await s.topicSubscribers('sport')).toEqual([])
      await s.unsubscribe(a2.id, 'alice')
      await s.unsubscribe(b.id, 'bob')
      expect(await s.topicSubscribers('news')).toEqual([])
    })
    test('webhooks: subscribe with one, verify it, list it; verification can be withdrawn', async (s) => {
      const url = 'https://hooks.example/agentmsg'
      const webhook = { url, verified: false }
      const sub = await s.subscribe({ agent: 'alice', topics: ['t'], webhook, now: NOW })
      expect(sub.webhook).toEqual({ url, verified: false })
      expect((await s.subscriptions())[0]!.webhook).toEqual({ url, verified: false })
      await s.setWebhookVerified(sub.id, true)
      expect(await s.subscriptions('alice')).toEqual([{ ...sub, webhook: { url, verified: true } }])
      await s.setWebhookVerified(sub.id, false)
      expect((await s.subscriptions('alice'))[0]!.webhook).toEqual({ url, verified: false })
      await s.setWebhookVerified('unknown', true) // no effect, no error
      const plain = await s.subscribe({ agent: 'bob', topics: [], now: NOW })
      await s.setWebhookVerified(plain.id, true)
      expect((await s.subscriptions('bob'))[0]!.webhook).toBeUndefined()
    })
    test('returned subscriptions are copies', async (s) => {
      const webhook = { url: 'https://h.example/', verified: false }
      const sub = await s.subscribe({ agent: 'alice', topics: ['t'], webhook, now: NOW })
      sub.topics.push('u')
      sub.webhook!.verified = true
      const listed = (await s.subscriptions())[0]!
      expect(listed.topics).toEqual(['t'])
      expect(listed.webhook!.verified).toBe(false)
    })
  })

  describe('publish', () => {
    test('stores a direct message and reports its cursor; a repeat is a duplicate with the same cursor', async (s) => {
      const m = message(['alice'])
      const [first] = await s.publish(m)
      expect(first).toEqual({ mailbox: 'alice', cursor: expect.any(String), duplicate: false })
      const again = await s.publish({ ...m, json: m.json.replace('hello', 'HELLO') })
      expect(again).toEqual([{ mailbox: 'alice', cursor: first!.cursor, duplicate: true }])
      expect((await page(s, 'alice')).entries).toEqual([
        { cursor: first!.cursor, from: m.from, messageId: m.messageId, json: m.json },
      ])
      expect(await s.usage('alice')).toEqual({ messages: 1, bytes: m.bytes })
    })
    test('the same id from another sender is another message', async (s) => {
      const a = message(['alice'], { messageId: 'same', from: 'did:key:z6MkA' })
      const b = message(['alice'], { messageId: 'same', from: 'did:key:z6MkB' })
      const [ra] = await s.publish(a)
      const [rb] = await s.publish(b)
      expect([ra!.duplicate, rb!.duplicate]).toEqual([false, false])
      expect(rb!.cursor).not.toBe(ra!.cursor)
      const senders = (await page(s, 'alice')).entries.map((e) => e.from)
      expect(senders).toEqual(['did:key:z6MkA', 'did:key:z6MkB'])
    })
    test('no mailboxes (a topic without subscribers) stores nothing', async (_s, sut) => {
      expect(await sut.store.publish(message([]))).toEqual([])
      expect(await sut.storedMessages()).toBe(0)
    })
    test('a mailbox named twice in one publish gets one entry', async (s) => {
      const results = await s.publish(message(['alice', 'alice']))
      expect(results).toHaveLength(1)
      expect(results[0]!.duplicate).toBe(false)
      expect(await s.usage('alice')).toMatchObject({ messages: 1 })
    })
    test('a topic message fans out to 3 mailboxes, stored once; an ack by one leaves it for the others', async (s, sut) => {
      const m = message(['alice', 'bob', 'carol'], { size: 2000 })
      const results = await s.publish(m)
      expect(results.map((r) => [r.mailbox, r.duplicate])).toEqual([
        ['alice', false],
        ['bob', false],
        ['carol', false],
      ])
      expectIncreasing(results.map((r) => r.cursor!))
      expect(await sut.storedMessages()).toBe(1)
      for (const agent of ['alice', 'bob', 'carol']) {
        expect(await s.usage(agent)).toEqual({ messages: 1, bytes: m.bytes })
      }
      expect(await s.ack('bob', m.messageId, m.from)).toBe(1)
      expect((await page(s, 'bob')).entries).toEqual([])
      expect(ids((await page(s, 'alice')).entries)).toEqual([m.messageId])
      expect((await page(s, 'carol')).entries[0]!.json).toBe(m.json)
      expect(await sut.storedMessages()).toBe(1)
      await s.ack('alice', m.messageId)
      expect(await sut.storedMessages()).toBe(1)
      await s.ack('carol', m.messageId, m.from)
      expect(await sut.storedMessages()).toBe(0)
    })
    test('a fan-out where some mailboxes already hold it: duplicates there, new entries elsewhere', async (s) => {
      const m = message(['alice'])
      const [ra] = await s.publish(m)
      const results = await s.publish({ ...m, mailboxes: ['alice', 'bob'] })
      expect(results[0]).toEqual({ mailbox: 'alice', cursor: ra!.cursor, duplicate: true })
      expect(results[1]).toMatchObject({ mailbox: 'bob', duplicate: false })
      expect(await s.usage('alice')).toMatchObject({ messages: 1 })
      expect(await s.usage('bob')).toMatchObject({ messages: 1 })
    })
    test('concurrent publishes of the same message: one entry, the others duplicates of it', async (s) => {
      const m = message(['alice'])
      const results = (await Promise.all(Array.from({ length: 20 }, () => s.publish(m)))).flat()
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1)
      expect(new Set(results.map((r) => r.cursor)).size).toBe(1)
      expect(await s.usage('alice')).toMatchObject({ messages: 1 })
    })
    test('publishing to a mailbox no one subscribed stores it (state checks belong to the relay)', async (s) => {
      await s.publish(message(['nobody']))
      expect(await s.usage('nobody')).toMatchObject({ messages: 1 })
      expect(await s.mailboxState('nobody')).toBe('none')
      await s.subscribe({ agent: 'nobody', topics: [], now: NOW })
      expect(await s.mailboxState('nobody')).toBe('open')
      expect(await s.usage('nobody')).toMatchObject({ messages: 1 })
    })
    test('rejects a malformed input', async (s) => {
      await expect(s.publish({ ...message(['alice']), bytes: -1 })).rejects.toThrow(RangeError)
      await expect(s.publish({ ...message(['alice']), bytes: 1.5 })).rejects.toThrow(RangeError)
    })
  })

  describe('remembered duplicates', () => {
    test('an acknowledged message stays a duplicate until forgetAt, then may be stored again', async (s) => {
      const m = { ...message(['alice']), forgetAt: NOW + 2 * DAY }
      await s.publish(m)
      await s.ack('alice', m.messageId, m.from)
      const query = { mailboxes: ['alice'], from: m.from, messageId: m.messageId, now: NOW }
      expect(await s.isDuplicate(query)).toBe(true)
      const replays = await Promise.all(
        Array.from({ length: 5 }, (_, i) => s.publish({ ...m, receivedAt: NOW + i })),
      )
      expect(replays.flat().every((r) => r.duplicate && r.cursor === undefined)).toBe(true)
      expect(await all(s, 'alice')).toEqual([])
      // Still remembered after an expire() before forgetAt…
      await s.expire(NOW + 2 * DAY - 1)
      expect(await s.isDuplicate({ ...query, now: NOW + 2 * DAY - 1 })).toBe(true)
      // …and forgotten from forgetAt on.
      expect(await s.isDuplicate({ ...query, now: NOW + 2 * DAY })).toBe(false)
      await s.expire(NOW + 2 * DAY)
      const late = { ...m, receivedAt: NOW + 2 * DAY, expiresAt: NOW + 9 * DAY }
      expect(await duplicate(s, late)).toBe(false)
      expect(
        ids(await all(s, 'alice', { limit: 500, maxBytes: 1 << 20, now: late.receivedAt })),
      ).toEqual([m.messageId])
    })
    test('by default remembered 8 days and 15 minutes after receipt', async (s) => {
      const m = message(['alice'])
      await s.publish(m)
      await s.ack('alice', m.messageId)
      const query = { mailboxes: ['alice'], from: m.from, messageId: m.messageId }
      expect(await s.isDuplicate({ ...query, now: DEFAULT_FORGET - 1 })).toBe(true)
      expect(await s.isDuplicate({ ...query, now: DEFAULT_FORGET })).toBe(false)
    })
    test('an expired entry is remembered too; another sender’s same id is another message', async (s) => {
      const m = message(['alice'], { expiresAt: NOW + 100 })
      await s.publish(m)
      expect(await s.expire(NOW + 100)).toBe(1)
      const [again] = await s.publish({ ...m, receivedAt: NOW + 200, expiresAt: NOW + DAY })
      expect(again).toEqual({ mailbox: 'alice', duplicate: true })
      const other = message(['alice'], { messageId: m.messageId, from: 'did:key:z6MkOther' })
      expect(await duplicate(s, other)).toBe(false)
    })
    test('remembers per mailbox: a topic copy is new only where it was never stored', async (s) => {
      const m = message(['alice', 'bob'])
      await s.publish(m)
      await s.ack('alice', m.messageId, m.from)
      const base = { from: m.from, messageId: m.messageId, now: NOW }
      expect(await s.isDuplicate({ ...base, mailboxes: ['alice', 'bob'] })).toBe(true)
      expect(await s.isDuplicate({ ...base, mailboxes: ['alice', 'bob', 'carol'] })).toBe(false)
      expect(await s.isDuplicate({ ...base, mailboxes: ['carol'] })).toBe(false)
      expect(await s.isDuplicate({ ...base, mailboxes: [] })).toBe(false)
      const results = await s.publish({ ...m, mailboxes: ['alice', 'bob', 'carol'] })
      expect(results.map((r) => [r.mailbox, r.duplicate])).toEqual([
        ['alice', true],
        ['bob', true],
        ['carol', false],
      ])
      expect(await all(s, 'alice')).toEqual([])
      expect(ids(await all(s, 'carol'))).toEqual([m.messageId])
    })
    test('a held entry answers isDuplicate, acks without `from` are remembered too', async (s) => {
      const m = message(['alice'])
      const query = { mailboxes: ['alice'], from: m.from, messageId: m.messageId, now: NOW }
      expect(await s.isDuplicate(query)).toBe(false)
      await s.publish(m)
      expect(await s.isDuplicate(query)).toBe(true)
      expect(await s.ack('alice', m.messageId)).toBe(1)
      expect(await s.isDuplicate(query)).toBe(true)
      expect((await s.publish(m))[0]).toEqual({ mailbox: 'alice', duplicate: true })
    })
  })
}
