/**
 * RelayStore contract, PROFILE §9 quotas: mailbox, a sender's share, relay-wide, a client address
 * bucket's share, `skipFull`.
 */
import type { MailboxFullError, PublishInput, RelayStorageFullError } from '@agentmsg/relay'
import { describe, expect } from 'vitest'
import { all, duplicate, ids, message, NOW, page, WEEK } from './fixtures.js'
import type { RelayStoreSuite } from './suite.js'

const A = 'did:key:z6MkSenderA'
const B = 'did:key:z6MkSenderB'
/** Client address buckets as the relay passes them (IPv4 per address, IPv6 per /48). */
const X = '203.0.113.7'
const Y = '2001:db8:1::/48'

/** A message from bucket `bucket` to `mailboxes`, of about `size` bytes. */
const charged = (
  bucket: string,
  mailboxes: string[],
  size: number,
  extra: { receivedAt?: number; expiresAt?: number; skipFull?: boolean } = {},
): PublishInput => ({ ...message(mailboxes, { size, ...extra }), bucket, ...extra })

export function quotaChecks(suite: RelayStoreSuite): void {
  const { it, full, relayFull } = suite
  describe('quotas', () => {
    // These check the mailbox quota alone: one sender may hold all of it.
    it('by count: MailboxFullError, nothing stored; a duplicate is still answered; an ack makes room', async (open) => {
      const [s] = await open({ messages: 2, senderMessages: 2 })
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
    it('by bytes: a message that would pass the limit is refused; one that fits exactly is taken', async (open) => {
      const [s] = await open({ bytes: 5000, senderBytes: 5000 })
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
    it('a full mailbox in a fan-out: nothing stored for any mailbox of that call', async (open) => {
      const [s, sut] = await open({ messages: 1 })
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
    })
    it('a refused publish does not fail concurrent ones', async (open) => {
      const [s] = await open({ messages: 3, senderMessages: 3 })
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
    it('expired entries do not hold room', async (open) => {
      const [s] = await open({ messages: 2, senderMessages: 2 })
      await s.publish(message(['alice'], { expiresAt: NOW + 10 }))
      await s.publish(message(['alice'], { expiresAt: NOW + 10 }))
      await full(s.publish(message(['alice'])))
      const later = message(['alice'], { receivedAt: NOW + 10, expiresAt: NOW + WEEK })
      expect(await duplicate(s, later)).toBe(false)
      expect(ids((await page(s, 'alice', { now: NOW + 10 })).entries)).toEqual([later.messageId])
    })
  })

  describe('one sender’s share of a mailbox', () => {
    it('by default a quarter of the mailbox: the sender stops there, another still gets through', async (open) => {
      const [s] = await open({ messages: 8 })
      for (let i = 0; i < 2; i++) await s.publish(message(['alice'], { from: A }))
      const err = await s.publish(message(['alice'], { from: A })).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(suite.relay.MailboxFullError)
      expect((err as MailboxFullError).reason).toBe('sender')
      expect(await s.usage('alice', A)).toMatchObject({ messages: 2 })
      const fromB = message(['alice'], { from: B })
      expect(await duplicate(s, fromB)).toBe(false)
      expect(await s.usage('alice', B)).toEqual({ messages: 1, bytes: fromB.bytes })
      expect(await s.usage('alice')).toMatchObject({ messages: 3 })
      // The share is per mailbox: A still writes to bob.
      expect(await duplicate(s, message(['bob'], { from: A }))).toBe(false)
    })
    it('by bytes, a quarter of the mailbox bytes; an ack gives the sender room again', async (open) => {
      const [s] = await open({ bytes: 4000 })
      const first = message(['alice'], { from: A, size: 600 })
      await s.publish(first)
      await full(s.publish(message(['alice'], { from: A, size: 600 })))
      expect(await s.usage('alice', A)).toEqual({ messages: 1, bytes: first.bytes })
      await s.ack('alice', first.messageId, first.from)
      expect(await s.usage('alice', A)).toEqual({ messages: 0, bytes: 0 })
      expect(await duplicate(s, message(['alice'], { from: A, size: 600 }))).toBe(false)
    })
    it('expired entries of the sender do not hold its share', async (open) => {
      const [s] = await open({ messages: 4 })
      await s.publish(message(['alice'], { from: A, expiresAt: NOW + 10 }))
      await full(s.publish(message(['alice'], { from: A })))
      const later = message(['alice'], { from: A, receivedAt: NOW + 10 })
      expect(await duplicate(s, later)).toBe(false)
      expect(await s.usage('alice', A)).toMatchObject({ messages: 1 })
    })
  })

  describe('relay-wide storage cap', () => {
    it('counts the bytes stored, a topic message once; past it nothing is stored', async (open) => {
      const [s, sut] = await open({ totalBytes: 5000 })
      const topic = message(['alice', 'bob', 'carol'], { from: A, size: 2000 })
      await s.publish(topic)
      expect(await s.usage()).toEqual({ messages: 1, bytes: topic.bytes })
      const direct = message(['dave'], { from: B, size: 2000 })
      await s.publish(direct)
      const over = message(['erin'], { from: B, size: 1500 })
      const err = await s.publish(over).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(suite.relay.RelayStorageFullError)
      expect((err as Error).name).toBe('RelayStorageFullError')
      expect((err as RelayStorageFullError).scope).toBe('relay')
      expect(await s.usage('erin')).toEqual({ messages: 0, bytes: 0 })
      expect(await sut.storedMessages()).toBe(2)
      // A topic publish cannot pass the cap either.
      await relayFull(s.publish({ ...message(['alice', 'bob'], { size: 1500 }), skipFull: true }))
      // A duplicate is still answered at the cap.
      expect(await duplicate(s, direct)).toBe(true)
      // Room comes back when the last mailbox holding a message acknowledges it.
      for (const agent of ['alice', 'bob']) await s.ack(agent, topic.messageId, topic.from)
      await relayFull(s.publish(over))
      await s.ack('carol', topic.messageId, topic.from)
      expect(await s.usage()).toEqual({ messages: 1, bytes: direct.bytes })
      expect(await duplicate(s, over)).toBe(false)
    })
    it('expired messages do not hold room', async (open) => {
      const [s] = await open({ totalBytes: 3000 })
      await s.publish(message(['alice'], { size: 2000, expiresAt: NOW + 10 }))
      await relayFull(s.publish(message(['bob'], { size: 2000 })))
      const later = message(['bob'], { size: 2000, receivedAt: NOW + 10, expiresAt: NOW + WEEK })
      expect(await duplicate(s, later)).toBe(false)
      expect((await s.usage()).bytes).toBe(later.bytes)
    })
  })

  describe('one client address bucket’s share of the relay', () => {
    it('by default 5% of the cap: past it RelayStorageFullError (bucket), nothing stored; other buckets still store', async (open) => {
      const [s, sut] = await open({ totalBytes: 100_000 })
      const first = charged(X, ['alice'], 3000)
      await s.publish(first)
      const err = await s.publish(charged(X, ['bob'], 2500)).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(suite.relay.RelayStorageFullError)
      expect((err as RelayStorageFullError).scope).toBe('bucket')
      expect(await s.usage('bob')).toEqual({ messages: 0, bytes: 0 })
      expect(await sut.storedMessages()).toBe(1)
      // Another bucket, and a publish charged to none, are not held back.
      expect(await duplicate(s, charged(Y, ['bob'], 2500))).toBe(false)
      expect(await duplicate(s, message(['bob'], { size: 2500 }))).toBe(false)
      const rest = charged(X, ['carol'], 5000 - first.bytes)
      expect(rest.bytes).toBe(5000 - first.bytes)
      await s.publish(rest)
      await relayFull(s.publish(charged(X, ['carol'], 10)))
      expect(await duplicate(s, first)).toBe(true)
      // The charge goes with the entry.
      await s.ack('alice', first.messageId, first.from)
      expect(await duplicate(s, charged(X, ['alice'], 2500))).toBe(false)
    })
    it('a topic message is charged once (a configured share), until its last mailbox acknowledges', async (open) => {
      const [s] = await open({ totalBytes: 100_000, bucketBytes: 4000 })
      const topic = charged(X, ['alice', 'bob', 'carol'], 3000, { skipFull: true })
      expect((await s.publish(topic)).every((r) => !r.duplicate && !r.full)).toBe(true)
      const next = charged(X, ['dave'], 1500)
      for (const agent of ['alice', 'bob']) {
        await relayFull(s.publish(next))
        await s.ack(agent, topic.messageId, topic.from)
      }
      await relayFull(s.publish(next))
      await s.ack('carol', topic.messageId, topic.from)
      expect(await duplicate(s, next)).toBe(false)
    })
    it('expired messages do not hold the bucket’s room', async (open) => {
      const [s] = await open({ totalBytes: 100_000 })
      await s.publish(charged(X, ['alice'], 3000, { expiresAt: NOW + 10 }))
      await relayFull(s.publish(charged(X, ['bob'], 3000)))
      expect(await duplicate(s, charged(X, ['bob'], 3000, { receivedAt: NOW + 10 }))).toBe(false)
    })
    it('concurrent publishes of one bucket: as many as fit are stored, the rest refused', async (open) => {
      const [s, sut] = await open({ totalBytes: 100_000 })
      const outcomes = await Promise.allSettled(
        ['a', 'b', 'c', 'd', 'e', 'f'].map((agent) => s.publish(charged(X, [agent], 2000))),
      )
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2)
      expect(await sut.storedMessages()).toBe(2)
    })
  })

  describe('topic fan-out (skipFull)', () => {
    it('stores for every mailbox with room and skips full ones, stored once', async (open) => {
      const [s, sut] = await open({ messages: 2, senderMessages: 2 })
      // bob filled his own mailbox and never acknowledges.
      for (let i = 0; i < 2; i++) await s.publish(message(['bob'], { from: 'did:key:z6MkBob' }))
      const stored = await sut.storedMessages()
      const m = { ...message(['alice', 'bob', 'carol'], { from: A }), skipFull: true }
      const results = await s.publish(m)
      expect(results.map((r) => [r.mailbox, r.duplicate, r.full === true])).toEqual([
        ['alice', false, false],
        ['bob', false, true],
        ['carol', false, false],
      ])
      expect(results[1]!.cursor).toBeUndefined()
      expect(await sut.storedMessages()).toBe(stored + 1)
      for (const agent of ['alice', 'carol'])
        expect(ids(await all(s, agent))).toEqual([m.messageId])
      expect(ids(await all(s, 'bob'))).not.toContain(m.messageId)
      expect(await s.usage('bob')).toMatchObject({ messages: 2 })
      // Once bob has room, the same message reaches him alone.
      const [first] = await all(s, 'bob')
      await s.ack('bob', first!.messageId, first!.from)
      const again = await s.publish(m)
      expect(again.map((r) => [r.mailbox, r.duplicate])).toEqual([
        ['alice', true],
        ['bob', false],
        ['carol', true],
      ])
      expect(await sut.storedMessages()).toBe(stored + 1)
    })
    it('skips a mailbox where the sender holds its share; every mailbox full → nothing stored', async (open) => {
      const [s, sut] = await open({ messages: 4 })
      await s.publish(message(['alice'], { from: A }))
      const stored = await sut.storedMessages()
      const m = { ...message(['alice', 'bob'], { from: A }), skipFull: true }
      const results = await s.publish(m)
      expect(results.map((r) => r.full === true)).toEqual([true, false])
      const none = { ...message(['alice'], { from: A }), skipFull: true }
      expect(await s.publish(none)).toEqual([{ mailbox: 'alice', duplicate: false, full: true }])
      expect(await sut.storedMessages()).toBe(stored + 1)
    })
  })
}
