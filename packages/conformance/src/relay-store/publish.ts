/** RelayStore contract: publish (direct, fan-out, duplicates, concurrency) and quotas. */
import type { MailboxFullError } from '@agentmsg/relay'
import { describe, expect } from 'vitest'
import {
  duplicate,
  expectIncreasing,
  ids,
  publishInput as message,
  RELAY_STORE_NOW as NOW,
  page,
  WEEK,
} from './fixtures.js'
import type { RelayStoreSuite } from './suite.js'

export function publishChecks(suite: RelayStoreSuite): void {
  const { test, full } = suite
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

  describe('quotas', () => {
    // These check the mailbox quota alone: one sender may hold all of it.
    test('by count: MailboxFullError, nothing stored; a duplicate is still answered; an ack makes room', {
      messages: 2,
      senderMessages: 2,
    }, async (s) => {
      const m1 = message(['alice'])
      await s.publish(m1)
      await s.publish(message(['alice']))
      const before = await s.usage('alice')
      const err = (await s.publish(message(['alice'])).catch((e: unknown) => e)) as MailboxFullError
      expect(err).toBeInstanceOf(suite.relay.MailboxFullError)
      expect([err.mailbox, err.reason, err.name]).toEqual(['alice', 'mailbox', 'MailboxFullError'])
      expect(await s.usage('alice')).toEqual(before)
      expect((await page(s, 'alice')).entries).toHaveLength(2)
      expect(await duplicate(s, m1)).toBe(true)
      await s.ack('alice', m1.messageId, m1.from)
      expect(await duplicate(s, message(['alice']))).toBe(false)
    })
    test('by bytes: a message that would pass the limit is refused; one that fits exactly is taken', {
      bytes: 5000,
      senderBytes: 5000,
    }, async (s) => {
      const big = message(['alice'], { size: 3000 })
      await s.publish(big)
      await full(s.publish(message(['alice'], { size: 2500 })))
      expect(await s.usage('alice')).toEqual({ messages: 1, bytes: big.bytes })
      const rest = message(['alice'], { size: 5000 - big.bytes })
      expect(rest.bytes).toBe(5000 - big.bytes)
      await s.publish(rest)
      expect(await s.usage('alice')).toEqual({ messages: 2, bytes: 5000 })
      await full(s.publish(message(['bob'], { size: 6000 })))
      expect(await s.usage('bob')).toEqual({ messages: 0, bytes: 0 })
    })
    test(
      'a full mailbox in a fan-out: nothing stored for any mailbox of that call',
      { messages: 1 },
      async (s, sut) => {
        await s.publish(message(['bob']))
        const stored = await sut.storedMessages()
        const m = message(['alice', 'bob', 'carol'])
        const err = await s.publish(m).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(suite.relay.MailboxFullError)
        expect((err as MailboxFullError).mailbox).toBe('bob')
        for (const agent of ['alice', 'carol']) {
          expect(await s.usage(agent)).toEqual({ messages: 0, bytes: 0 })
          expect((await page(s, agent)).entries).toEqual([])
        }
        expect(await sut.storedMessages()).toBe(stored)
        // …and the message can be published later without the full mailbox.
        const later = await s.publish({ ...m, mailboxes: ['alice', 'carol'] })
        expect(later.map((r) => r.duplicate)).toEqual([false, false])
      },
    )

    test('a refused publish does not fail concurrent ones', {
      messages: 3,
      senderMessages: 3,
    }, async (s) => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) => s.publish(message([i % 2 === 0 ? 'alice' : 'bob']))),
      )
      // alice and bob each get 3 (quota 3) — all fit.
      expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true)
      const more = await Promise.allSettled(
        ['alice', 'carol', 'bob', 'carol'].map((agent) => s.publish(message([agent]))),
      )
      expect(more.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'rejected', 'fulfilled'])
      expect(await s.usage('carol')).toMatchObject({ messages: 2 })
    })
    test('expired entries do not hold room', { messages: 2, senderMessages: 2 }, async (s) => {
      await s.publish(message(['alice'], { expiresAt: NOW + 10 }))
      await s.publish(message(['alice'], { expiresAt: NOW + 10 }))
      await full(s.publish(message(['alice'])))
      const later = message(['alice'], { receivedAt: NOW + 10, expiresAt: NOW + WEEK })
      expect(await duplicate(s, later)).toBe(false)
      expect(ids((await page(s, 'alice', { now: NOW + 10 })).entries)).toEqual([later.messageId])
    })
  })
}
