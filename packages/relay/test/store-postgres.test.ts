/**
 * The PostgreSQL relay store: the shared contract (twice: default batches, and batches of 3),
 * then its schema migration, its group commit, its LISTEN connection and readiness. Several
 * stores on one schema (relay processes sharing a database) are tested in
 * store-postgres-nodes.test.ts. Needs AGENTMSG_TEST_POSTGRES_URL (postgres-helpers.ts).
 */
import {
  publishInput as message,
  RELAY_STORE_NOW as NOW,
  type RelayStoreFactory,
  testRelayStore,
} from '@agentmsg/conformance'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import {
  openPostgresRelayStore,
  POSTGRES_SCHEMA_VERSION,
  type PostgresRelayStoreOptions,
} from '../src/store/postgres.js'
import { postgresChannel } from '../src/store/postgres-schema.js'
import { POSTGRES_LISTEN_APPLICATION } from '../src/store/postgres-session.js'
import {
  adminQuery,
  closeAdmin,
  dropPostgresSchema,
  freshPostgresSchema,
  POSTGRES_TEST_URL,
  postgresTestNodes,
  waitFor,
} from './postgres-helpers.js'

const url = POSTGRES_TEST_URL ?? ''

afterAll(closeAdmin)

/** The contract's factory: a store in a schema of its own, dropped after it closed. */
function contract(options: Partial<PostgresRelayStoreOptions> = {}): RelayStoreFactory {
  return async ({ quota }) => {
    const schema = freshPostgresSchema()
    const store = await openPostgresRelayStore({
      connectionString: url,
      schema,
      ...options,
      ...(quota === undefined ? {} : { quota }),
    })
    return {
      store,
      // Counted through another connection, not the store.
      storedMessages: async () =>
        Number((await adminQuery(`SELECT count(*) AS n FROM "${schema}".messages`))[0]!.n),
      dispose: () => dropPostgresSchema(url, schema),
    }
  }
}

const count = async (schema: string, table: string) =>
  (await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".${table}`))[0]!.n as number

describe.runIf(POSTGRES_TEST_URL !== undefined)('PostgreSQL relay store', () => {
  testRelayStore('postgres', contract())
  testRelayStore('postgres (maxBatch 3)', contract({ groupCommit: { maxBatch: 3 } }))

  const { schemaForTest, node } = postgresTestNodes()

  describe('schema', () => {
    it('three concurrent opens of a fresh schema all succeed; one version row', async () => {
      const schema = schemaForTest()
      await Promise.all([node(schema), node(schema), node(schema)])
      const rows = await adminQuery(`SELECT version FROM "${schema}".schema_version`)
      expect(rows).toEqual([{ version: POSTGRES_SCHEMA_VERSION }])
    })

    it('migrates a version 1 schema: entries and totals kept, cursors handed out still valid', async () => {
      const schema = schemaForTest()
      const before = await node(schema)
      const [first, second] = [message(['alice']), message(['alice'])]
      await before.publish(first)
      await before.publish(second)
      await before.close()
      // Back to version 1's layout: one relay-wide cursor counter (it had reached 42) and
      // relay-wide totals in one row.
      const t = `"${schema}"`
      await adminQuery(
        `CREATE TABLE ${t}.relay_state (id integer PRIMARY KEY, next_cursor bigint NOT NULL, ` +
          'messages bigint NOT NULL, bytes bigint NOT NULL); ' +
          `INSERT INTO ${t}.relay_state SELECT 1, 42, sum(messages), sum(bytes) FROM ${t}.relay_totals; ` +
          `DROP TABLE ${t}.relay_totals; DROP SEQUENCE ${t}.entry_cursor; ` +
          `UPDATE ${t}.entries SET cursor = cursor + 39; ` +
          `ALTER TABLE ${t}.entries DROP CONSTRAINT entries_pkey, ADD PRIMARY KEY (cursor); ` +
          `CREATE INDEX entries_mailbox_cursor ON ${t}.entries (mailbox, cursor); ` +
          `ALTER TABLE ${t}.entries ADD FOREIGN KEY (message_ref) REFERENCES ${t}.messages (id); ` +
          `ALTER TABLE ${t}.buckets DROP COLUMN stripe, ADD PRIMARY KEY (bucket); ` +
          `UPDATE ${t}.schema_version SET version = 1`,
      )
      const after = await node(schema)
      const rows = await adminQuery(`SELECT version FROM ${t}.schema_version`)
      expect(rows).toEqual([{ version: POSTGRES_SCHEMA_VERSION }])
      expect(await after.usage()).toMatchObject({ messages: 2 })
      const page = { limit: 10, maxBytes: 1e6, now: NOW }
      const held = await after.retrieve('alice', { ...page, after: '40' })
      expect(held.entries.map((e) => [e.cursor, e.messageId])).toEqual([['41', second.messageId]])
      // New entries come after every cursor handed out.
      const [alice] = await after.publish(message(['alice']))
      const [bob] = await after.publish(message(['bob']))
      expect([alice!.cursor, bob!.cursor]).toEqual(['42', '43'])
      expect(await after.usage()).toMatchObject({ messages: 4 })
    })

    it('refuses a schema from a newer relay, and an invalid schema name', async () => {
      const schema = schemaForTest()
      await (await node(schema)).close()
      await adminQuery(`UPDATE "${schema}".schema_version SET version = version + 1`)
      await expect(openPostgresRelayStore({ connectionString: url, schema })).rejects.toThrow(
        /newer than this relay/,
      )
      await expect(
        openPostgresRelayStore({ connectionString: url, schema: 'Bad-Name' }),
      ).rejects.toThrow(RangeError)
    })
  })

  describe('group commit', () => {
    it('a publish resolves only after COMMIT: another connection sees it then', async () => {
      const schema = schemaForTest()
      const store = await node(schema)
      let resolved = 0
      const extra = await Promise.all(
        Array.from({ length: 30 }, () =>
          store.publish(message(['alice'])).then(async () => {
            const mine = ++resolved
            return (await count(schema, 'entries')) - mine
          }),
        ),
      )
      // Each publish is visible to others once it resolved (and so are those before it).
      expect(extra.every((n) => n >= 0)).toBe(true)
    })

    it('an unexpected error in one write of a batch fails only that write', async () => {
      const store = await node(schemaForTest())
      const bad = { ...message(['alice']), json: undefined as unknown as string }
      const outcomes = await Promise.allSettled([
        store.publish(message(['alice'])),
        store.publish(bad),
        store.publish(message(['alice'])),
      ])
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
      expect(await store.usage('alice')).toMatchObject({ messages: 2 })
    })

    it('close() commits queued writes first, lazy acks included; later writes reject', async () => {
      const schema = schemaForTest()
      const store = await node(schema)
      const m = message(['alice'])
      await store.publish(m)
      const acked = store.ack('alice', m.messageId, m.from, { lazy: true })
      const pending = store.publish(message(['bob']))
      await store.close()
      expect(await acked).toBe(1)
      expect((await pending)[0]!.duplicate).toBe(false)
      expect(await count(schema, 'entries')).toBe(1)
      await expect(store.publish(message(['alice']))).rejects.toThrow(/closed/)
      await expect(store.checkWritable()).rejects.toThrow(/closed/)
    })
  })

  describe('LISTEN connection', () => {
    it('reconnects after its backend is terminated, says "anything may have changed", then hears again', async () => {
      const schema = schemaForTest()
      const errors: unknown[] = []
      const store = await node(schema, { onError: (error) => errors.push(error) })
      // Another process publishes: a store does not pass on its own publishes' signals.
      const other = await node(schema)
      const heard: Array<string | undefined> = []
      store.watch((mailbox) => heard.push(mailbox))
      await store.publish(message(['own']))
      await other.publish(message(['alice']))
      await waitFor(() => heard.includes('alice'))
      expect(heard).not.toContain('own')
      expect(heard).not.toContain(undefined)
      const killed = await adminQuery(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity ' +
          'WHERE application_name = $1 AND query = $2',
        [POSTGRES_LISTEN_APPLICATION, `LISTEN "${postgresChannel(schema)}"`],
      )
      // Both stores' LISTEN connections (the publisher's too).
      expect(killed).toEqual([{ ok: true }, { ok: true }])
      await waitFor(() => heard.includes(undefined))
      expect(errors.length).toBeGreaterThan(0)
      await other.publish(message(['bob']))
      await waitFor(() => heard.includes('bob'))
    })
  })

  describe('readiness and metrics', () => {
    it('checkWritable resolves on a writable database and rejects on a read-only one', async () => {
      const schema = schemaForTest()
      expect(await (await node(schema)).checkWritable()).toBeUndefined()
      // A pool whose sessions are read-only, as on a standby.
      const pool = new pg.Pool({ connectionString: url, max: 2 })
      pool.on('connect', (client) => {
        client.query('SET default_transaction_read_only = on').catch(() => undefined)
      })
      try {
        const store = await openPostgresRelayStore({ pool, schema })
        // A standby refuses writes: `unavailable` (the relay answers 503), not a defect.
        await expect(store.checkWritable()).rejects.toMatchObject({ code: 'unavailable' })
        await store.close()
        // The caller's pool stays open after close().
        expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
      } finally {
        await pool.end()
      }
    })

    it('countMailboxes counts mailboxes opened by a subscription, open or closed', async () => {
      const store = await node(schemaForTest())
      expect(await store.countMailboxes()).toBe(0)
      await store.publish(message(['nobody']))
      const sub = await store.subscribe({ agent: 'alice', topics: [], now: NOW })
      await store.subscribe({ agent: 'bob', topics: [], now: NOW })
      await store.unsubscribe(sub.id, 'alice')
      expect(await store.countMailboxes()).toBe(2)
    })
  })
})
