/**
 * Webhooks with two relay processes on one PostgreSQL (issue 13): one relay at a time pushes
 * (the store elects it), so each message is POSTed once, not once per relay; a webhook
 * subscribed through the other relay is picked up by the leader; when the leader stops, the
 * other relay takes the pushes over; a relay that starts while another leads (and so knows
 * the subscription too) does not push. Needs AGENTMSG_TEST_POSTGRES_URL (postgres-helpers.ts).
 */
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { afterAll, describe, expect, it } from 'vitest'
import { openPostgresRelayStore } from '../src/store/postgres.js'
import { POSTGRES_LEAD_APPLICATION, postgresLeadKey } from '../src/store/postgres-session.js'
import { startRelay, type TestRelay, testCertificate } from './helpers.js'
import {
  adminQuery,
  closeAdmin,
  dropPostgresSchema,
  freshPostgresSchema,
  POSTGRES_TEST_URL,
  waitFor,
} from './postgres-helpers.js'

const schema = freshPostgresSchema()
afterAll(async () => {
  await closeAdmin()
  if (POSTGRES_TEST_URL !== undefined) await dropPostgresSchema(POSTGRES_TEST_URL, schema)
})

/**
 * Leadership connections holding this test's webhook lock (other tests' relays, running at the
 * same time on other schemas, hold locks of their own): an advisory lock's 64-bit key is split
 * into `classid` (high half) and `objid` (low half).
 */
async function leadersHeld(): Promise<number> {
  const rows = await adminQuery(
    `SELECT count(*)::integer AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1
        AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($2, 0)`,
    [POSTGRES_LEAD_APPLICATION, postgresLeadKey(schema, 'webhooks')],
  )
  return rows[0]!.n as number
}

async function relayOnSchema(): Promise<TestRelay> {
  const store = await openPostgresRelayStore({ connectionString: POSTGRES_TEST_URL!, schema })
  return startRelay({ store })
}

describe.runIf(POSTGRES_TEST_URL !== undefined)('webhooks from relays sharing PostgreSQL', () => {
  it('one relay pushes each message once; the other takes over when it stops', {
    timeout: 60_000,
  }, async () => {
    const cert = await testCertificate()
    const posts = new Map<string, number>()
    const hook: Server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, string>
        res.writeHead(200, { 'content-type': 'application/json' })
        if (body.type === 'webhook_verify') {
          res.end(JSON.stringify({ challenge: body.challenge }))
          return
        }
        posts.set(body.message_id!, (posts.get(body.message_id!) ?? 0) + 1)
        res.end(JSON.stringify({ status: 'accepted', message_id: body.message_id }))
      })
    })
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve))
    const hookUrl = `https://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`

    // A starts first and leads; B waits for the lock.
    const a = await relayOnSchema()
    await waitFor(async () => (await leadersHeld()) === 1)
    const b = await relayOnSchema()
    let restarted: TestRelay | undefined
    try {
      // A sender per phase: the per-sender limit (burst 20, PROFILE §9) is not what is tested.
      const [alice, carol, dave] = [
        await fixtureAgent(),
        await fixtureAgent(),
        await fixtureAgent(),
      ]
      const bob = await fixtureAgent()
      // Subscribed through B, which does not push: A picks the subscription up from the store.
      await b.client.subscribe(bob, { push: { mode: 'webhook', url: hookUrl } })
      const first: string[] = []
      for (let i = 0; i < 10; i++) {
        const message = await signedMessage(alice, bob.id)
        const relay = i % 2 === 0 ? a : b
        expect((await relay.client.publish(message)).status).toBe(202)
        first.push(message.message_id)
      }
      await waitFor(() => first.every((id) => posts.has(id)))
      // Every push acknowledged (deleted) before A goes, so none is in flight at the handover.
      await waitFor(async () => (await a.store.usage(bob.id)).messages === 0)

      await a.stop()
      const second: string[] = []
      for (let i = 0; i < 10; i++) {
        const message = await signedMessage(carol, bob.id)
        expect((await b.client.publish(message)).status).toBe(202)
        second.push(message.message_id)
      }
      await waitFor(() => second.every((id) => posts.has(id)))
      await waitFor(async () => (await b.store.usage(bob.id)).messages === 0)

      // A comes back while B leads: both know the subscription now, and still only one pushes.
      const again = await relayOnSchema()
      restarted = again
      const third: string[] = []
      for (let i = 0; i < 20; i++) {
        const message = await signedMessage(dave, bob.id)
        const relay = i % 2 === 0 ? again : b
        expect((await relay.client.publish(message)).status).toBe(202)
        third.push(message.message_id)
      }
      await waitFor(() => third.every((id) => posts.has(id)))
      await waitFor(async () => (await b.store.usage(bob.id)).messages === 0)

      expect([...posts.keys()].sort()).toEqual([...first, ...second, ...third].sort())
      expect([...posts.values()].every((n) => n === 1)).toBe(true)
      expect(a.errors).toEqual([])
      expect(b.errors).toEqual([])
      expect(again.errors).toEqual([])
    } finally {
      await restarted?.stop()
      await b.stop()
      await a.stop().catch(() => undefined)
      await new Promise<void>((resolve) => hook.close(() => resolve()))
    }
  })
})
