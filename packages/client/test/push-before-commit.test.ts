/**
 * A relay pushes a publish before its commit (protocol decision 34) and is killed before the
 * commit: the relay runs as operators run it (the built CLI in a child process) on PostgreSQL,
 * where a deferred constraint trigger holds each COMMIT that stores an entry on an advisory lock
 * the test holds. Bob's stream gets Alice's message while its COMMIT waits; the relay is killed
 * with SIGKILL, so nothing is stored and Alice has no 202. Her outbox publishes the message
 * again to the relay restarted; Bob's stream resumes after the pushed cursor and gets the
 * second copy, which his receive pipeline drops as a replay (and acknowledges): his application
 * sees the message once, and his mailbox ends empty (the retry's cursor was not the pushed one).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAddressPolicy } from '@agentmsg/core/server'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import {
  adminQuery,
  closeAdmin,
  dropPostgresSchema,
  freshPostgresSchema,
  POSTGRES_TEST_URL,
  waitFor,
} from '../../relay/test/postgres-helpers.js'
import {
  freePort,
  isRunning,
  killHard,
  type RelayProcess,
  requireBuiltCli,
  startRelayProcess,
} from '../../relay/test/relay-process.js'
import { createNodeAgent } from '../src/node.js'
import { collect } from './helpers.js'

/** The advisory lock key the held COMMITs wait on. */
const LOCK = 734_021
const schema = freshPostgresSchema()
const s = `"${schema}"`
const cleanups: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined)
  if (POSTGRES_TEST_URL !== undefined) await dropPostgresSchema(POSTGRES_TEST_URL, schema)
  await closeAdmin()
})

const entriesOf = async (messageId: string) =>
  (
    await adminQuery(`SELECT count(*)::int AS n FROM ${s}.entries WHERE message_id = $1`, [
      messageId,
    ])
  )[0]!.n as number

describe.runIf(POSTGRES_TEST_URL !== undefined)(
  'a relay killed after a push, before its commit',
  () => {
    it("shows the publisher's retry to the receiving application once", {
      timeout: 120_000,
    }, async () => {
      requireBuiltCli()
      const dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-push-commit-'))
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }))
      const port = await freePort()
      const flags = ['--store', POSTGRES_TEST_URL!, '--store-schema', schema]
      let relay: RelayProcess = await startRelayProcess(dataDir, port, flags)
      cleanups.push(async () => isRunning(relay) && killHard(relay))
      const ca = await readFile(relay.certFile, 'utf8')
      const url = `https://127.0.0.1:${port}`
      const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
      const agent = async () => {
        const a = await createNodeAgent({ relays: [url], ca, addressPolicy })
        cleanups.push(() => a.close())
        return a
      }
      const [alice, bob] = [await agent(), await agent()]
      const inbox = collect(bob, 'message')
      const delivered = collect(alice, 'delivered')
      // Bob's stream is live once a first message came through it.
      await alice.send(bob.id, 'first', { relays: [url] })
      await inbox.nth(1, 30_000)

      // From now on a COMMIT that stores an entry waits for the test's lock.
      const holder = new pg.Client({ connectionString: POSTGRES_TEST_URL })
      await holder.connect()
      cleanups.push(() => holder.end())
      await holder.query('SELECT pg_advisory_lock($1)', [LOCK])
      await adminQuery(
        `CREATE FUNCTION ${s}.hold() RETURNS trigger LANGUAGE plpgsql AS ` +
          `$$ BEGIN PERFORM pg_advisory_xact_lock(${LOCK}); RETURN NULL; END $$`,
      )
      await adminQuery(
        `CREATE CONSTRAINT TRIGGER hold AFTER INSERT ON ${s}.entries ` +
          `DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${s}.hold()`,
      )
      const sending = alice.send(bob.id, 'once', { relays: [url] })
      const pushed = await inbox.nth(2, 30_000)
      expect(pushed.text).toBe('once')
      const messageId = pushed.message.message_id
      // Pushed while its COMMIT waits: not stored.
      const held = await adminQuery(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted",
        [LOCK],
      )
      expect(held).toHaveLength(1)
      expect(await entriesOf(messageId)).toBe(0)

      await killHard(relay)
      // The dead process's session ends now (not when TCP keepalive notices): rolled back.
      await adminQuery('SELECT pg_terminate_backend($1)', [held[0]!.pid])
      await adminQuery(`DROP TRIGGER hold ON ${s}.entries`)
      await holder.query('SELECT pg_advisory_unlock($1)', [LOCK])
      expect(await entriesOf(messageId)).toBe(0)
      // No 202: the send waits in Alice's outbox.
      expect((await sending).pending).toBe(true)

      relay = await startRelayProcess(dataDir, port, flags)
      // Alice's outbox publishes it again (202: stored, a new entry), Bob's stream gets it, and
      // his pipeline acknowledges it as a replay.
      await waitFor(() => delivered.seen.some((d) => d.messageId === messageId))
      await waitFor(async () => (await entriesOf(messageId)) === 0)
      await alice.send(bob.id, 'after', { relays: [url] })
      await inbox.nth(3, 30_000)
      expect(inbox.seen.map((m) => m.text)).toEqual(['first', 'once', 'after'])
    })
  },
)
