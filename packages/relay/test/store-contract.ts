/**
 * The RelayStore contract (PROFILE §9, SPEC §3.3) as a reusable suite: every store (memory,
 * SQLite, later PostgreSQL) runs `testRelayStore(name, factory)` and must pass all of it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { RelayQuota } from '../src/store/common.js'
import {
  MailboxFullError,
  type MailboxEntry,
  type PublishInput,
  type RelayStore,
} from '../src/store/types.js'

/** A store under test, with a way to count stored messages from outside the store. */
export interface StoreUnderTest {
  store: RelayStore
  /** Messages physically stored (a topic message once, however many mailboxes reference it). */
  storedMessages(): number | Promise<number>
  /** Clean up after `store.close()` (temp files…). */
  dispose?(): void | Promise<void>
}

export type StoreFactory = (options: {
  quota?: RelayQuota
}) => StoreUnderTest | Promise<StoreUnderTest>

export const NOW = 1_700_000_000_000
const WEEK = 7 * 24 * 3600 * 1000
const BIG_PAGE = { limit: 500, maxBytes: 8 * 1024 * 1024, now: NOW }

let counter = 0

/** A message to publish; `size` pads the JSON to about that many bytes. */
export function message(
  mailboxes: string[],
  overrides: Partial<Omit<PublishInput, 'json' | 'bytes'>> & { size?: number; body?: string } = {},
): PublishInput {
  const from = overrides.from ?? 'did:key:z6MkSender'
  const messageId = overrides.messageId ?? `msg-${++counter}`
  const base = { message_id: messageId, from: { agent: from }, body: overrides.body ?? 'hello é' }
  let json = JSON.stringify(base)
  if (overrides.size !== undefined && overrides.size > json.length) {
    json = JSON.stringify({ ...base, pad: 'x'.repeat(overrides.size - json.length - 10) })
  }
  return {
    mailboxes,
    from,
    messageId,
    json,
    bytes: Buffer.byteLength(json, 'utf8'),
    receivedAt: overrides.receivedAt ?? NOW,
    expiresAt: overrides.expiresAt ?? NOW + WEEK,
  }
}

/** Numeric order of cursors (the stores' cursors are integer text). */
function cursorValue(cursor: string): bigint {
  expect(cursor).toMatch(/^\d+$/)
  return BigInt(cursor)
}

function expectIncreasing(cursors: string[]): void {
  for (let i = 1; i < cursors.length; i++) {
    expect(cursorValue(cursors[i]!) > cursorValue(cursors[i - 1]!)).toBe(true)
  }
}

async function all(store: RelayStore, mailbox: string, page = BIG_PAGE): Promise<MailboxEntry[]> {
  const out: MailboxEntry[] = []
  let after: string | undefined
  for (;;) {
    const got = await store.retrieve(mailbox, { ...page, after })
    if (got.entries.length === 0) return out
    out.push(...got.entries)
    after = got.cursor
  }
}

const ids = (entries: MailboxEntry[]) => entries.map((e) => e.messageId)

export function testRelayStore(name: string, factory: StoreFactory): void {
  describe(`RelayStore contract: ${name}`, () => {
    const open: StoreUnderTest[] = []
    async function make(options: { quota?: RelayQuota } = {}): Promise<StoreUnderTest> {
      const sut = await factory(options)
      open.push(sut)
      return sut
    }
    async function store(options: { quota?: RelayQuota } = {}): Promise<RelayStore> {
      return (await make(options)).store
    }
    afterEach(async () => {
      for (const sut of open.splice(0)) {
        await sut.store.close()
        await sut.dispose?.()
      }
    })

    describe('subscriptions and mailbox states', () => {
      it('none → open → open (two) → closed when the last subscription is deleted → open again', async () => {
        const s = await store()
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

      it('a closed mailbox keeps what it holds and can still be retrieved and acknowledged', async () => {
        const s = await store()
        const sub = await s.subscribe({ agent: 'alice', topics: [], now: NOW })
        const m = message(['alice'])
        await s.publish(m)
        await s.unsubscribe(sub.id, 'alice')
        expect(await s.mailboxState('alice')).toBe('closed')
        const page = await s.retrieve('alice', BIG_PAGE)
        expect(ids(page.entries)).toEqual([m.messageId])
        expect(page.entries[0]!.json).toBe(m.json)
        expect(await s.usage('alice')).toEqual({ messages: 1, bytes: m.bytes })
        expect(await s.ack('alice', m.messageId, m.from)).toBe(1)
        expect(await s.retrieve('alice', BIG_PAGE)).toEqual({ entries: [], cursor: undefined })
      })

      it("unsubscribe refuses another agent's subscription and unknown ids", async () => {
        const s = await store()
        const sub = await s.subscribe({ agent: 'alice', topics: ['t'], now: NOW })
        expect(await s.unsubscribe(sub.id, 'mallory')).toBe(false)
        expect(await s.unsubscribe('no-such-id', 'alice')).toBe(false)
        expect(await s.mailboxState('alice')).toBe('open')
        expect(await s.topicSubscribers('t')).toEqual(['alice'])
        expect(await s.mailboxState('mallory')).toBe('none')
      })

      it('subscriptions() lists all or one agent’s, with topics (no repeats) and created', async () => {
        const s = await store()
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

      it('topicSubscribers lists each agent once and follows unsubscribes', async () => {
        const s = await store()
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

      it('webhooks: subscribe with one, verify it, list it; verification can be withdrawn', async () => {
        const s = await store()
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
        expect(await s.subscriptions('alice')).toEqual([
          { ...sub, webhook: { url, verified: true } },
        ])
        await s.setWebhookVerified(sub.id, false)
        expect((await s.subscriptions('alice'))[0]!.webhook).toEqual({ url, verified: false })
        await s.setWebhookVerified('unknown', true) // no effect, no error
        const plain = await s.subscribe({ agent: 'bob', topics: [], now: NOW })
        await s.setWebhookVerified(plain.id, true)
        expect((await s.subscriptions('bob'))[0]!.webhook).toBeUndefined()
      })

      it('returned subscriptions are copies', async () => {
        const s = await store()
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

    describe('publish', () => {
      it('stores a direct message and reports its cursor; a repeat is a duplicate with the same cursor', async () => {
        const s = await store()
        const m = message(['alice'])
        const [first] = await s.publish(m)
        expect(first).toEqual({ mailbox: 'alice', cursor: expect.any(String), duplicate: false })
        const again = await s.publish({ ...m, json: m.json.replace('hello', 'HELLO') })
        expect(again).toEqual([{ mailbox: 'alice', cursor: first!.cursor, duplicate: true }])
        const page = await s.retrieve('alice', BIG_PAGE)
        expect(page.entries).toEqual([
          { cursor: first!.cursor, from: m.from, messageId: m.messageId, json: m.json },
        ])
        expect(await s.usage('alice')).toEqual({ messages: 1, bytes: m.bytes })
      })

      it('the same id from another sender is another message', async () => {
        const s = await store()
        const a = message(['alice'], { messageId: 'same', from: 'did:key:z6MkA' })
        const b = message(['alice'], { messageId: 'same', from: 'did:key:z6MkB' })
        const [ra] = await s.publish(a)
        const [rb] = await s.publish(b)
        expect(ra!.duplicate).toBe(false)
        expect(rb!.duplicate).toBe(false)
        expect(rb!.cursor).not.toBe(ra!.cursor)
        expect((await s.retrieve('alice', BIG_PAGE)).entries.map((e) => e.from)).toEqual([
          'did:key:z6MkA',
          'did:key:z6MkB',
        ])
      })

      it('no mailboxes (a topic without subscribers) stores nothing', async () => {
        const sut = await make()
        expect(await sut.store.publish(message([]))).toEqual([])
        expect(await sut.storedMessages()).toBe(0)
      })

      it('a mailbox named twice in one publish gets one entry', async () => {
        const s = await store()
        const results = await s.publish(message(['alice', 'alice']))
        expect(results).toHaveLength(1)
        expect(results[0]!.duplicate).toBe(false)
        expect(await s.usage('alice')).toMatchObject({ messages: 1 })
      })

      it('a topic message fans out to 3 mailboxes, stored once; an ack by one leaves it for the others', async () => {
        const sut = await make()
        const s = sut.store
        const m = message(['alice', 'bob', 'carol'], { size: 2000 })
        const results = await s.publish(m)
        expect(results.map((r) => [r.mailbox, r.duplicate])).toEqual([
          ['alice', false],
          ['bob', false],
          ['carol', false],
        ])
        expectIncreasing(results.map((r) => r.cursor))
        expect(await sut.storedMessages()).toBe(1)
        for (const agent of ['alice', 'bob', 'carol']) {
          expect(await s.usage(agent)).toEqual({ messages: 1, bytes: m.bytes })
        }
        expect(await s.ack('bob', m.messageId, m.from)).toBe(1)
        expect((await s.retrieve('bob', BIG_PAGE)).entries).toEqual([])
        expect(ids((await s.retrieve('alice', BIG_PAGE)).entries)).toEqual([m.messageId])
        expect((await s.retrieve('carol', BIG_PAGE)).entries[0]!.json).toBe(m.json)
        expect(await sut.storedMessages()).toBe(1)
        await s.ack('alice', m.messageId)
        expect(await sut.storedMessages()).toBe(1)
        await s.ack('carol', m.messageId, m.from)
        expect(await sut.storedMessages()).toBe(0)
      })

      it('a fan-out where some mailboxes already hold it: duplicates there, new entries elsewhere', async () => {
        const s = await store()
        const m = message(['alice'])
        const [ra] = await s.publish(m)
        const results = await s.publish({ ...m, mailboxes: ['alice', 'bob'] })
        expect(results[0]).toEqual({ mailbox: 'alice', cursor: ra!.cursor, duplicate: true })
        expect(results[1]).toMatchObject({ mailbox: 'bob', duplicate: false })
        expect(await s.usage('alice')).toMatchObject({ messages: 1 })
        expect(await s.usage('bob')).toMatchObject({ messages: 1 })
      })

      it('concurrent publishes of the same message: one entry, the others duplicates of it', async () => {
        const s = await store()
        const m = message(['alice'])
        const results = (await Promise.all(Array.from({ length: 20 }, () => s.publish(m)))).flat()
        expect(results.filter((r) => !r.duplicate)).toHaveLength(1)
        expect(new Set(results.map((r) => r.cursor)).size).toBe(1)
        expect(await s.usage('alice')).toMatchObject({ messages: 1 })
      })

      it('publishing to a mailbox no one subscribed stores it (state checks belong to the relay)', async () => {
        const s = await store()
        await s.publish(message(['nobody']))
        expect(await s.usage('nobody')).toMatchObject({ messages: 1 })
        expect(await s.mailboxState('nobody')).toBe('none')
        await s.subscribe({ agent: 'nobody', topics: [], now: NOW })
        expect(await s.mailboxState('nobody')).toBe('open')
        expect(await s.usage('nobody')).toMatchObject({ messages: 1 })
      })

      it('rejects a malformed input', async () => {
        const s = await store()
        await expect(s.publish({ ...message(['alice']), bytes: -1 })).rejects.toThrow(RangeError)
        await expect(s.publish({ ...message(['alice']), bytes: 1.5 })).rejects.toThrow(RangeError)
      })
    })

    describe('quotas', () => {
      it('by count: MailboxFullError, nothing stored; a duplicate is still answered; an ack makes room', async () => {
        const s = await store({ quota: { messages: 2 } })
        const m1 = message(['alice'])
        await s.publish(m1)
        await s.publish(message(['alice']))
        const before = await s.usage('alice')
        const err = await s.publish(message(['alice'])).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(MailboxFullError)
        expect((err as MailboxFullError).mailbox).toBe('alice')
        expect((err as MailboxFullError).name).toBe('MailboxFullError')
        expect(await s.usage('alice')).toEqual(before)
        expect((await s.retrieve('alice', BIG_PAGE)).entries).toHaveLength(2)
        expect((await s.publish(m1))[0]!.duplicate).toBe(true)
        await s.ack('alice', m1.messageId, m1.from)
        expect((await s.publish(message(['alice'])))[0]!.duplicate).toBe(false)
      })

      it('by bytes: a message that would pass the limit is refused; one that fits exactly is taken', async () => {
        const s = await store({ quota: { bytes: 5000 } })
        const big = message(['alice'], { size: 3000 })
        await s.publish(big)
        await expect(s.publish(message(['alice'], { size: 2500 }))).rejects.toBeInstanceOf(
          MailboxFullError,
        )
        expect(await s.usage('alice')).toEqual({ messages: 1, bytes: big.bytes })
        const rest = message(['alice'], { size: 5000 - big.bytes })
        expect(rest.bytes).toBe(5000 - big.bytes)
        await s.publish(rest)
        expect(await s.usage('alice')).toEqual({ messages: 2, bytes: 5000 })
        await expect(s.publish(message(['bob'], { size: 6000 }))).rejects.toBeInstanceOf(
          MailboxFullError,
        )
        expect(await s.usage('bob')).toEqual({ messages: 0, bytes: 0 })
      })

      it('a full mailbox in a fan-out: nothing stored for any mailbox of that call', async () => {
        const sut = await make({ quota: { messages: 1 } })
        const s = sut.store
        await s.publish(message(['bob']))
        const stored = await sut.storedMessages()
        const m = message(['alice', 'bob', 'carol'])
        const err = await s.publish(m).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(MailboxFullError)
        expect((err as MailboxFullError).mailbox).toBe('bob')
        for (const agent of ['alice', 'carol']) {
          expect(await s.usage(agent)).toEqual({ messages: 0, bytes: 0 })
          expect((await s.retrieve(agent, BIG_PAGE)).entries).toEqual([])
        }
        expect(await sut.storedMessages()).toBe(stored)
        // …and the message can be published later without the full mailbox.
        expect(
          (await s.publish({ ...m, mailboxes: ['alice', 'carol'] })).map((r) => r.duplicate),
        ).toEqual([false, false])
      })

      it('a refused publish does not fail concurrent ones', async () => {
        const s = await store({ quota: { messages: 3 } })
        const outcomes = await Promise.allSettled(
          Array.from({ length: 6 }, (_, i) => s.publish(message([i % 2 === 0 ? 'alice' : 'bob']))),
        )
        // alice and bob each get 3 (quota 3) — all fit.
        expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true)
        const more = await Promise.allSettled([
          s.publish(message(['alice'])),
          s.publish(message(['carol'])),
          s.publish(message(['bob'])),
          s.publish(message(['carol'])),
        ])
        expect(more.map((o) => o.status)).toEqual([
          'rejected',
          'fulfilled',
          'rejected',
          'fulfilled',
        ])
        expect(await s.usage('carol')).toMatchObject({ messages: 2 })
      })

      it('expired entries do not hold room', async () => {
        const s = await store({ quota: { messages: 2 } })
        await s.publish(message(['alice'], { expiresAt: NOW + 10 }))
        await s.publish(message(['alice'], { expiresAt: NOW + 10 }))
        await expect(s.publish(message(['alice']))).rejects.toBeInstanceOf(MailboxFullError)
        const later = message(['alice'], { receivedAt: NOW + 10, expiresAt: NOW + WEEK })
        expect((await s.publish(later))[0]!.duplicate).toBe(false)
        expect(ids((await s.retrieve('alice', { ...BIG_PAGE, now: NOW + 10 })).entries)).toEqual([
          later.messageId,
        ])
      })
    })

    describe('retrieve', () => {
      it('pages by cursor, oldest first; an empty page keeps the cursor', async () => {
        const s = await store()
        const sent = []
        for (let i = 0; i < 5; i++) sent.push(message(['alice']))
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
        expect(ids((await s.retrieve('alice', { ...opts, after: p4.cursor })).entries)).toEqual([
          late.messageId,
        ])
        // Retrieval does not remove anything.
        expect(await all(s, 'alice', opts)).toHaveLength(6)
      })

      it('an empty or unknown mailbox gives an empty page', async () => {
        const s = await store()
        expect(await s.retrieve('nobody', BIG_PAGE)).toEqual({ entries: [], cursor: undefined })
        await s.publish(message(['alice']))
        expect(await s.retrieve('nobody', { ...BIG_PAGE, after: '12345' })).toEqual({
          entries: [],
          cursor: '12345',
        })
      })

      it('caps a page by bytes: stops before passing maxBytes, but always returns at least one', async () => {
        const s = await store()
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
        const exact = await s.retrieve('alice', {
          ...opts,
          maxBytes: small[0]!.bytes + small[1]!.bytes,
        })
        expect(exact.entries).toHaveLength(2)
        const under = await s.retrieve('alice', {
          ...opts,
          maxBytes: small[0]!.bytes + small[1]!.bytes - 1,
        })
        expect(under.entries).toHaveLength(1)
      })

      it('a page is short only at the end or for the byte cap', async () => {
        const s = await store()
        for (let i = 0; i < 7; i++) await s.publish(message(['alice'], { size: 200 }))
        expect(
          (await s.retrieve('alice', { limit: 5, maxBytes: 1 << 20, now: NOW })).entries,
        ).toHaveLength(5)
        expect(
          (await s.retrieve('alice', { limit: 50, maxBytes: 1 << 20, now: NOW })).entries,
        ).toHaveLength(7)
      })

      it('skips entries expired at `now`', async () => {
        const s = await store()
        const short = message(['alice'], { expiresAt: NOW + 1000 })
        const long = message(['alice'])
        await s.publish(short)
        await s.publish(long)
        expect(ids((await s.retrieve('alice', { ...BIG_PAGE, now: NOW + 999 })).entries)).toEqual([
          short.messageId,
          long.messageId,
        ])
        expect(ids((await s.retrieve('alice', { ...BIG_PAGE, now: NOW + 1000 })).entries)).toEqual([
          long.messageId,
        ])
        // An expired entry does not count against the limit.
        expect(
          ids(
            (await s.retrieve('alice', { limit: 1, maxBytes: 1 << 20, now: NOW + 1000 })).entries,
          ),
        ).toEqual([long.messageId])
      })

      it('refuses a cursor that is not one of its cursors’ syntax', async () => {
        const s = await store()
        for (const after of ['abc', '-1', '1.5', '', ' 1', '0x10', '99999999999999999999']) {
          await expect(s.retrieve('alice', { ...BIG_PAGE, after })).rejects.toThrow(RangeError)
        }
        await expect(s.retrieve('alice', { ...BIG_PAGE, limit: 0 })).rejects.toThrow(RangeError)
      })
    })

    describe('cursors', () => {
      it('strictly increase across mailboxes, batches and concurrent publishes, and never repeat', async () => {
        const s = await store()
        const seen: string[] = []
        for (let round = 0; round < 3; round++) {
          const sent = Array.from({ length: 40 }, (_, i) =>
            message(i % 3 === 0 ? ['alice', 'bob'] : [['alice', 'bob', 'carol'][i % 3]!]),
          )
          const results = await Promise.all(sent.map((m) => s.publish(m)))
          const cursors = results.flat().map((r) => r.cursor)
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

      it('the order of publish resolution matches the order of cursors in the mailbox', async () => {
        const s = await store()
        const sent = Array.from({ length: 30 }, () => message(['alice']))
        const results = await Promise.all(sent.map((m) => s.publish(m)))
        const byCursor = sent
          .map((m, i) => ({ id: m.messageId, cursor: results[i]![0]!.cursor }))
          .sort((a, b) => (cursorValue(a.cursor) < cursorValue(b.cursor) ? -1 : 1))
        expect(ids(await all(s, 'alice', { limit: 7, maxBytes: 1 << 20, now: NOW }))).toEqual(
          byCursor.map((x) => x.id),
        )
      })

      it('“after” any cursor returns exactly the later entries', async () => {
        const s = await store()
        for (let i = 0; i < 10; i++) await s.publish(message(i % 2 ? ['alice'] : ['alice', 'bob']))
        const entries = await all(s, 'alice')
        for (let i = 0; i < entries.length; i++) {
          const after = await s.retrieve('alice', { ...BIG_PAGE, after: entries[i]!.cursor })
          expect(after.entries).toEqual(entries.slice(i + 1))
        }
      })
    })

    describe('acknowledge', () => {
      it('with `from`: only that sender’s entry; without: every entry with that id', async () => {
        const s = await store()
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

      it('unknown ids, other mailboxes and other senders → 0, nothing removed', async () => {
        const s = await store()
        const m = message(['alice'])
        await s.publish(m)
        expect(await s.ack('alice', 'nope')).toBe(0)
        expect(await s.ack('alice', 'nope', m.from)).toBe(0)
        expect(await s.ack('alice', m.messageId, 'did:key:z6MkOther')).toBe(0)
        expect(await s.ack('bob', m.messageId, m.from)).toBe(0)
        expect(await s.ack('nobody', m.messageId)).toBe(0)
        expect(ids(await all(s, 'alice'))).toEqual([m.messageId])
      })

      it('after an ack the message may be published again (a new entry, a new cursor)', async () => {
        const s = await store()
        const m = message(['alice'])
        const [r1] = await s.publish(m)
        await s.ack('alice', m.messageId, m.from)
        const [r2] = await s.publish(m)
        expect(r2!.duplicate).toBe(false)
        expect(cursorValue(r2!.cursor) > cursorValue(r1!.cursor)).toBe(true)
      })
    })

    describe('expiry', () => {
      it('expire(now) removes expired entries and their messages, returns the count', async () => {
        const sut = await make()
        const s = sut.store
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
        // The id of an expired message may come again.
        expect((await s.publish({ ...soon, expiresAt: NOW + WEEK }))[0]!.duplicate).toBe(false)
      })

      it('an ack of an already expired (not yet removed) entry still removes it', async () => {
        const sut = await make()
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
        await expect(sut.store.retrieve('alice', BIG_PAGE)).rejects.toThrow(/closed/)
        await sut.dispose?.()
      })
    })
  })
}
