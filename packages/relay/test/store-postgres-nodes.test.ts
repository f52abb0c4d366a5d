/**
 * Several PostgreSQL relay stores on one schema, as relay processes sharing one database open
 * it (each store has its own pool): duplicates, quotas and cursor order hold across them, a
 * publish on one wakes watchers on the others, nonces are shared, and one of them leads a job.
 * Needs AGENTMSG_TEST_POSTGRES_URL (postgres-helpers.ts).
 */
import { publishInput as message, RELAY_STORE_NOW as NOW } from '@agentmsg/conformance'
import { afterAll, describe, expect, it } from 'vitest'
import type { PostgresRelayStore } from '../src/store/postgres.js'
import { POSTGRES_LEAD_APPLICATION, postgresLeadKey } from '../src/store/postgres-session.js'
import { MailboxFullError, RelayStorageFullError } from '../src/store/types.js'
import {
  adminQuery,
  closeAdmin,
  POSTGRES_TEST_URL,
  postgresTestNodes,
  waitFor,
} from './postgres-helpers.js'

const PAGE = { limit: 500, maxBytes: 8 << 20, now: NOW }

afterAll(closeAdmin)

describe.runIf(POSTGRES_TEST_URL !== undefined)('PostgreSQL relay stores sharing a schema', () => {
  const { nodes } = postgresTestNodes()

  it('dedupe: the same triples published on both at once are stored once each', async () => {
    const { schema, all } = await nodes(2)
    const sent = Array.from({ length: 40 }, () => message(['alice', 'bob']))
    const results = await Promise.all(
      sent.flatMap((m) => [all[0]!.publish(m), all[1]!.publish(m), all[1]!.publish(m)]),
    )
    for (let i = 0; i < sent.length; i++) {
      const copies = results.slice(i * 3, i * 3 + 3).flat()
      for (const mailbox of ['alice', 'bob']) {
        const here = copies.filter((r) => r.mailbox === mailbox)
        expect(here.filter((r) => !r.duplicate)).toHaveLength(1)
        expect(new Set(here.map((r) => r.cursor)).size).toBe(1)
      }
    }
    const stored = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".messages`)
    expect(stored).toEqual([{ n: 40 }])
    expect(await all[0]!.usage('alice')).toMatchObject({ messages: 40 })
    expect(await all[1]!.usage()).toMatchObject({ messages: 40 })
  })

  it('a mailbox quota holds under concurrent publishes from both', async () => {
    const quota = { messages: 25, senderMessages: 25 }
    const { all } = await nodes(2, { quota })
    const outcomes = await Promise.allSettled(
      Array.from({ length: 80 }, (_, i) => all[i % 2]!.publish(message(['alice']))),
    )
    const refused = outcomes.filter((o) => o.status === 'rejected')
    expect(outcomes.length - refused.length).toBe(25)
    for (const o of refused) expect(o.reason).toBeInstanceOf(MailboxFullError)
    expect(await all[1]!.usage('alice')).toMatchObject({ messages: 25 })
    expect((await all[0]!.retrieve('alice', PAGE)).entries).toHaveLength(25)
  })

  it('the relay-wide cap holds under concurrent publishes from both', async () => {
    const size = message(['x'], { size: 1000 }).bytes
    const { all } = await nodes(2, { quota: { totalBytes: size * 30 } })
    const outcomes = await Promise.allSettled(
      Array.from({ length: 90 }, (_, i) => all[i % 2]!.publish(message([`m${i}`], { size: 1000 }))),
    )
    const refused = outcomes.filter((o) => o.status === 'rejected')
    expect(outcomes.length - refused.length).toBe(30)
    for (const o of refused) expect(o.reason).toBeInstanceOf(RelayStorageFullError)
    expect(await all[0]!.usage()).toEqual({ messages: 30, bytes: size * 30 })
  })

  it('a client address bucket is charged alike on both (one key), its share held; only hashes stored', async () => {
    const size = message(['x'], { size: 1000 }).bytes
    const { schema, all } = await nodes(2, { quota: { bucketBytes: size * 10 } })
    const from = (bucket: string, i: number) => ({ ...message([`m${i}`], { size: 1000 }), bucket })
    const outcomes = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => all[i % 2]!.publish(from('198.51.100.23', i))),
    )
    const refused = outcomes.filter((o) => o.status === 'rejected')
    expect(outcomes.length - refused.length).toBe(10)
    for (const o of refused) expect(o.reason).toMatchObject({ scope: 'bucket' })
    await all[1]!.publish(from('198.51.100.24', 99))
    const rows = await adminQuery(
      `SELECT bucket, sum(bytes)::int AS bytes FROM "${schema}".buckets GROUP BY bucket`,
    )
    expect(rows.map((r) => r.bytes).sort()).toEqual([size, size * 10])
    for (const r of rows) expect(r.bucket).toMatch(/^[\w-]{22}$/)
    const stored = JSON.stringify(await adminQuery(`SELECT * FROM "${schema}".messages`))
    expect(stored).not.toContain('198.51.100')
  })

  it('watch on one node hears a publish on the other', async () => {
    const { all } = await nodes(2)
    const heard: Array<string | undefined> = []
    const stop = all[1]!.watch((mailbox) => heard.push(mailbox))
    await all[0]!.publish(message(['alice', 'bob']))
    await waitFor(() => heard.includes('alice') && heard.includes('bob'))
    stop()
    const before = heard.length
    await all[0]!.publish(message(['carol']))
    // The stopped listener stays silent while another one hears the next publish.
    const other: Array<string | undefined> = []
    all[1]!.watch((mailbox) => other.push(mailbox))
    await all[0]!.publish(message(['dave']))
    await waitFor(() => other.includes('dave'))
    expect(heard).toHaveLength(before)
  })

  it('rememberNonce: fresh on one node, a replay on the other, fresh again once expired', async () => {
    const { schema, all } = await nodes(2)
    const [a, b] = [all[0]!, all[1]!]
    const until = NOW + 600_000
    expect(await a.rememberNonce('did:key:z6MkA#k', 'nonce-1', until, NOW)).toBe('fresh')
    expect(await b.rememberNonce('did:key:z6MkA#k', 'nonce-1', until, NOW + 1)).toBe('replay')
    expect(await b.rememberNonce('did:key:z6MkB#k', 'nonce-1', until, NOW)).toBe('fresh')
    expect(await a.rememberNonce('did:key:z6MkA#k', 'nonce-1', until + 9, until)).toBe('replay')
    expect(await b.rememberNonce('did:key:z6MkA#k', 'nonce-1', until + 9, until + 1)).toBe('fresh')
    expect(await a.rememberNonce('did:key:z6MkA#k', 'nonce-1', until + 99, until + 2)).toBe(
      'replay',
    )
    // expire() drops the nonces expired by then (B's key's; A's key's was renewed).
    await a.expire(until + 5)
    const left = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".nonces`)
    expect(left).toEqual([{ n: 1 }])
  })

  it('cursors follow commit order: a reader polling after its cursor sees every entry once', async () => {
    const { all } = await nodes(3, { groupCommit: { maxBatch: 16 } })
    const [a, b, reader] = [all[0]!, all[1]!, all[2]!]
    const published = new Set<string>()
    const publishing = async (store: PostgresRelayStore) => {
      for (let wave = 0; wave < 30; wave++) {
        const sent = Array.from({ length: 10 }, () => message(['alice']))
        await Promise.all(sent.map((m) => store.publish(m)))
        for (const m of sent) published.add(m.messageId)
      }
    }
    const seen: string[] = []
    let last = -1n
    let after: string | undefined
    const read = async () => {
      const page = await reader.retrieve('alice', { ...PAGE, limit: 37, after })
      for (const entry of page.entries) {
        expect(BigInt(entry.cursor) > last).toBe(true)
        last = BigInt(entry.cursor)
        seen.push(entry.messageId)
      }
      after = page.cursor
      return page.entries.length
    }
    let done = false
    const writers = Promise.all([publishing(a), publishing(b)]).finally(() => (done = true))
    while (!done) await read()
    await writers
    // Everything committed now: read to the end.
    let more = true
    while (more) more = (await read()) > 0
    expect(published.size).toBe(600)
    expect(seen).toHaveLength(600)
    expect(new Set(seen)).toEqual(published)
  })

  describe('lead', () => {
    /** The sessions holding (granted) or waiting for a job's lock, with their application. */
    const lockHolders = (schema: string) =>
      adminQuery(
        'SELECT l.pid, l.granted, a.application_name AS app FROM pg_locks l ' +
          'JOIN pg_stat_activity a ON a.pid = l.pid, (SELECT hashtextextended($1, 0) AS k) h ' +
          "WHERE l.locktype = 'advisory' AND l.objsubid = 1 " +
          'AND l.classid::bigint = ((h.k >> 32) & 4294967295) AND l.objid::bigint = (h.k & 4294967295)',
        [postgresLeadKey(schema, 'webhooks')],
      )

    it('one node leads; the other takes over when the leader’s connection dies or it gives up', async () => {
      const { schema, all } = await nodes(2, { onError: () => undefined })
      const told = all.map(() => [] as boolean[])
      const leads = () => told.map((states) => states[states.length - 1] === true)
      const stops = all.map((store, i) => store.lead('webhooks', (on) => told[i]!.push(on)))
      // One holds the lock and says so; the other waits for it.
      await waitFor(async () => {
        const rows = await lockHolders(schema)
        return rows.length === 2 && rows.some((r) => !r.granted) && leads().includes(true)
      })
      expect(leads().filter(Boolean)).toHaveLength(1)
      const first = leads().indexOf(true)
      const second = 1 - first
      const holder = (await lockHolders(schema)).find((r) => r.granted)!
      expect(holder.app).toBe(POSTGRES_LEAD_APPLICATION)

      // The leader's session ends: it says false, the other one leads.
      await adminQuery('SELECT pg_terminate_backend($1)', [holder.pid])
      await waitFor(() => leads()[first] === false && leads()[second] === true)
      expect(told[first]).toEqual([true, false])
      // The first waits for the lock again, and gets it when the second gives the job up.
      await waitFor(async () => (await lockHolders(schema)).some((r) => !r.granted))
      stops[second]!()
      await waitFor(() => leads()[first] === true)
      expect(told[second]).toEqual([true])
      expect(told[first]).toEqual([true, false, true])
    })
  })
})
