/** RelayStore contract, PROFILE §9 duplicates: a (mailbox, from, message_id) is remembered until `forgetAt`. */

import { PROFILE } from '@agentmsg/core'
import { describe, expect } from 'vitest'
import {
  all,
  DAY,
  duplicate,
  ids,
  publishInput as message,
  RELAY_STORE_NOW as NOW,
} from './fixtures.js'
import type { RelayStoreSuite } from './suite.js'

/** The default window after receipt (8 days and 15 minutes). */
const DEFAULT_FORGET = NOW + PROFILE.relayForgetAfterReceiptMs

export function dedupeChecks(suite: RelayStoreSuite): void {
  const { test } = suite
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
