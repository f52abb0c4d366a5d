/** RelayStore contract: retrieve pages, cursors, acknowledgements, expiry and close. */
import { describe, expect, it } from 'vitest'
import { all, cursorValue, expectIncreasing, ids, message, NOW, page, WEEK } from './fixtures.js'
import type { RelayStoreSuite } from './suite.js'

export function readChecks(suite: RelayStoreSuite): void {
  const { factory, test } = suite
  describe('retrieve', () => {
    test('pages by cursor, oldest first; an empty page keeps the cursor', async (s) => {
      const sent = Array.from({ length: 5 }, () => message(['alice']))
      for (const m of sent) await s.publish(m)
      const opts = { limit: 2, maxBytes: 1 << 20, now: NOW }
      const p1 = await s.retrieve('alice', opts)
      expect(ids(p1.entries)).toEqual([sent[0]!.messageId, sent[1]!.messageId])
      expect(p1.cursor).toBe(p1.entries[1]!.cursor)
      const p2 = await s.retrieve('alice', { ...opts, after: p1.cursor })
      expect(ids(p2.entries)).toEqual([sent[2]!.messageId, sent[3]!.messageId])
      const p3 = await s.retrieve('alice', { ...opts, after: p2.cursor })
      expect(ids(p3.entries)).toEqual([sent[4]!.messageId])
      const p4 = await s.retrieve('alice', { ...opts, after: p3.cursor })
      expect(p4).toEqual({ entries: [], cursor: p3.cursor })
      // New mail appears after the cursor the client holds.
      const late = message(['alice'])
      await s.publish(late)
      const p5 = await s.retrieve('alice', { ...opts, after: p4.cursor })
      expect(ids(p5.entries)).toEqual([late.messageId])
      // Retrieval does not remove anything.
      expect(await all(s, 'alice', opts)).toHaveLength(6)
    })
    test('an empty or unknown mailbox gives an empty page', async (s) => {
      expect(await page(s, 'nobody')).toEqual({ entries: [], cursor: undefined })
      await s.publish(message(['alice']))
      expect(await page(s, 'nobody', { after: '12345' })).toEqual({ entries: [], cursor: '12345' })
    })
    test('caps a page by bytes: stops before passing maxBytes, but always returns at least one', async (s) => {
      const small = [message(['alice'], { size: 300 }), message(['alice'], { size: 300 })]
      const large = message(['alice'], { size: 5000 })
      const tail = message(['alice'], { size: 300 })
      for (const m of [...small, large, tail]) await s.publish(m)
      const opts = { limit: 100, maxBytes: 1000, now: NOW }
      const p1 = await s.retrieve('alice', opts)
      expect(ids(p1.entries)).toEqual(small.map((m) => m.messageId))
      // The large one exceeds maxBytes alone: it still comes, alone.
      const p2 = await s.retrieve('alice', { ...opts, after: p1.cursor })
      expect(ids(p2.entries)).toEqual([large.messageId])
      const p3 = await s.retrieve('alice', { ...opts, after: p2.cursor })
      expect(ids(p3.entries)).toEqual([tail.messageId])
      // Exactly maxBytes fits.
      const two = small[0]!.bytes + small[1]!.bytes
      expect((await s.retrieve('alice', { ...opts, maxBytes: two })).entries).toHaveLength(2)
      expect((await s.retrieve('alice', { ...opts, maxBytes: two - 1 })).entries).toHaveLength(1)
    })
    test('a page is short only at the end or for the byte cap', async (s) => {
      for (let i = 0; i < 7; i++) await s.publish(message(['alice'], { size: 200 }))
      const opts = { maxBytes: 1 << 20, now: NOW }
      expect((await s.retrieve('alice', { ...opts, limit: 5 })).entries).toHaveLength(5)
      expect((await s.retrieve('alice', { ...opts, limit: 50 })).entries).toHaveLength(7)
    })
    test('skips entries expired at `now`', async (s) => {
      const short = message(['alice'], { expiresAt: NOW + 1000 })
      const long = message(['alice'])
      await s.publish(short)
      await s.publish(long)
      const at = async (over: { now: number; limit?: number; maxBytes?: number }) =>
        ids((await page(s, 'alice', over)).entries)
      expect(await at({ now: NOW + 999 })).toEqual([short.messageId, long.messageId])
      expect(await at({ now: NOW + 1000 })).toEqual([long.messageId])
      // An expired entry does not count against the limit.
      expect(await at({ limit: 1, maxBytes: 1 << 20, now: NOW + 1000 })).toEqual([long.messageId])
    })
    test('refuses a cursor that is not one of its cursors’ syntax', async (s) => {
      for (const after of ['abc', '-1', '1.5', '', ' 1', '0x10', '99999999999999999999']) {
        await expect(page(s, 'alice', { after })).rejects.toThrow(RangeError)
      }
      await expect(page(s, 'alice', { limit: 0 })).rejects.toThrow(RangeError)
    })
  })

  describe('cursors', () => {
    test('strictly increase across mailboxes, batches and concurrent publishes, and never repeat', async (s) => {
      const seen: string[] = []
      for (let round = 0; round < 3; round++) {
        const sent = Array.from({ length: 40 }, (_, i) =>
          message(i % 3 === 0 ? ['alice', 'bob'] : [['alice', 'bob', 'carol'][i % 3]!]),
        )
        const results = await Promise.all(sent.map((m) => s.publish(m)))
        const cursors = results.flat().map((r) => r.cursor!)
        // Within one round (one batch or several), every cursor is new and greater than
        // every cursor of the previous rounds.
        expect(new Set(cursors).size).toBe(cursors.length)
        const max = seen.length === 0 ? -1n : cursorValue(seen[seen.length - 1]!)
        for (const c of cursors) expect(cursorValue(c) > max).toBe(true)
        seen.push(...[...cursors].sort((a, b) => (cursorValue(a) < cursorValue(b) ? -1 : 1)))
        // Removing the newest entry does not make its cursor available again.
        const newest = sent[sent.length - 1]!
        expect(await s.ack(newest.mailboxes[0]!, newest.messageId, newest.from)).toBe(1)
      }
      for (const agent of ['alice', 'bob', 'carol']) {
        const got = await all(s, agent)
        expectIncreasing(got.map((e) => e.cursor))
      }
    })
    test('the order of publish resolution matches the order of cursors in the mailbox', async (s) => {
      const sent = Array.from({ length: 30 }, () => message(['alice']))
      const results = await Promise.all(sent.map((m) => s.publish(m)))
      const byCursor = sent
        .map((m, i) => ({ id: m.messageId, cursor: results[i]![0]!.cursor! }))
        .sort((a, b) => (cursorValue(a.cursor) < cursorValue(b.cursor) ? -1 : 1))
      expect(ids(await all(s, 'alice', { limit: 7, maxBytes: 1 << 20, now: NOW }))).toEqual(
        byCursor.map((x) => x.id),
      )
    })
    test('“after” any cursor returns exactly the later entries', async (s) => {
      for (let i = 0; i < 10; i++) await s.publish(message(i % 2 ? ['alice'] : ['alice', 'bob']))
      const entries = await all(s, 'alice')
      for (let i = 0; i < entries.length; i++) {
        const after = await page(s, 'alice', { after: entries[i]!.cursor })
        expect(after.entries).toEqual(entries.slice(i + 1))
      }
    })
  })

  describe('acknowledge', () => {
    test('with `from`: only that sender’s entry; without: every entry with that id', async (s) => {
      const a = message(['alice'], { messageId: 'dup-id', from: 'did:key:z6MkA' })
      const b = message(['alice'], { messageId: 'dup-id', from: 'did:key:z6MkB' })
      const c = message(['alice'], { messageId: 'dup-id', from: 'did:key:z6MkC' })
      const other = message(['alice'])
      for (const m of [a, b, c, other]) await s.publish(m)
      expect(await s.ack('alice', 'dup-id', 'did:key:z6MkB')).toBe(1)
      expect((await all(s, 'alice')).map((e) => e.from)).toEqual([a.from, c.from, other.from])
      expect(await s.ack('alice', 'dup-id', 'did:key:z6MkB')).toBe(0)
      expect(await s.ack('alice', 'dup-id')).toBe(2)
      expect(ids(await all(s, 'alice'))).toEqual([other.messageId])
      expect(await s.usage('alice')).toEqual({ messages: 1, bytes: other.bytes })
    })
    test('unknown ids, other mailboxes and other senders → 0, nothing removed', async (s) => {
      const m = message(['alice'])
      await s.publish(m)
      expect(await s.ack('alice', 'nope')).toBe(0)
      expect(await s.ack('alice', 'nope', m.from)).toBe(0)
      expect(await s.ack('alice', m.messageId, 'did:key:z6MkOther')).toBe(0)
      expect(await s.ack('bob', m.messageId, m.from)).toBe(0)
      expect(await s.ack('nobody', m.messageId)).toBe(0)
      expect(ids(await all(s, 'alice'))).toEqual([m.messageId])
    })
    test('after an ack the same message is a duplicate: not stored or delivered again (PROFILE §9)', async (s) => {
      const m = message(['alice'])
      const [r1] = await s.publish(m)
      await s.ack('alice', m.messageId, m.from)
      const [r2] = await s.publish({ ...m, receivedAt: NOW + WEEK })
      expect(r2).toEqual({ mailbox: 'alice', duplicate: true })
      expect(r2!.cursor).toBeUndefined()
      const after = await page(s, 'alice', { after: r1!.cursor })
      expect(after).toEqual({ entries: [], cursor: r1!.cursor })
      expect(await all(s, 'alice')).toEqual([])
      expect(await s.usage('alice')).toEqual({ messages: 0, bytes: 0 })
    })
  })

  describe('expiry', () => {
    test('expire(now) removes expired entries and their messages, returns the count', async (s, sut) => {
      const soon = message(['alice', 'bob'], { expiresAt: NOW + 100 })
      const soon2 = message(['alice'], { expiresAt: NOW + 200 })
      const keep = message(['alice', 'bob'])
      for (const m of [soon, soon2, keep]) await s.publish(m)
      expect(await sut.storedMessages()).toBe(3)
      expect(await s.expire(NOW + 99)).toBe(0)
      expect(await s.expire(NOW + 100)).toBe(2)
      expect(await sut.storedMessages()).toBe(2)
      expect(await s.usage('alice')).toEqual({ messages: 2, bytes: soon2.bytes + keep.bytes })
      expect(await s.usage('bob')).toEqual({ messages: 1, bytes: keep.bytes })
      expect(await s.expire(NOW + 1000)).toBe(1)
      expect(await sut.storedMessages()).toBe(1)
      expect(ids(await all(s, 'alice'))).toEqual([keep.messageId])
      expect(await s.expire(NOW + 1000)).toBe(0)
      // An expired message is remembered: a copy of it is a duplicate, not stored again.
      expect(await s.publish({ ...soon, receivedAt: NOW + 1000, expiresAt: NOW + WEEK })).toEqual([
        { mailbox: 'alice', duplicate: true },
        { mailbox: 'bob', duplicate: true },
      ])
      expect(await sut.storedMessages()).toBe(1)
    })
    test('an ack of an already expired (not yet removed) entry still removes it', async (_s, sut) => {
      const m = message(['alice'], { expiresAt: NOW + 1 })
      await sut.store.publish(m)
      expect(await sut.store.ack('alice', m.messageId, m.from)).toBe(1)
      expect(await sut.storedMessages()).toBe(0)
      expect(await sut.store.expire(NOW + 10)).toBe(0)
    })
  })

  describe('close', () => {
    it('closes; later calls reject', async () => {
      const sut = await factory({})
      await sut.store.publish(message(['alice']))
      await sut.store.close()
      await sut.store.close() // idempotent
      await expect(sut.store.publish(message(['alice']))).rejects.toThrow(/closed/)
      await expect(page(sut.store, 'alice')).rejects.toThrow(/closed/)
      await sut.dispose?.()
    })
  })
}
