/** RelayStore contract: subscriptions, mailbox states (none, open, closed) and webhooks. */
import { describe, expect } from 'vitest'
import { ids, publishInput as message, RELAY_STORE_NOW as NOW, page } from './fixtures.js'
import type { RelayStoreSuite } from './suite.js'

export function subscriptionChecks(suite: RelayStoreSuite): void {
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
      const sub = await s.subscribe({
        agent: 'alice',
        topics: ['t'],
        webhook: { url, verified: false },
        now: NOW,
      })
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
      const sub = await s.subscribe({
        agent: 'alice',
        topics: ['t'],
        webhook: { url: 'https://h.example/', verified: false },
        now: NOW,
      })
      sub.topics.push('u')
      sub.webhook!.verified = true
      const listed = (await s.subscriptions())[0]!
      expect(listed.topics).toEqual(['t'])
      expect(listed.webhook!.verified).toBe(false)
    })
  })
}
