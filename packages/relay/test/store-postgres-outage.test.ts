/**
 * The database becomes unreachable under a running relay: a TCP proxy between the store and
 * PostgreSQL is shut and its connections cut. Publishes and reads then answer 503 with
 * Retry-After (PROFILE §7 `unavailable`), not 500, and the operator hears the cause; once the
 * proxy is back, the same relay stores and serves again without a restart.
 * Needs AGENTMSG_TEST_POSTGRES_URL (postgres-helpers.ts).
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { isAgentMsgError } from '@agentmsg/core'
import { afterAll, describe, expect, it } from 'vitest'
import { openPostgresRelayStore } from '../src/store/postgres.js'
import { isPostgresUnavailable } from '../src/store/postgres-errors.js'
import { startRelay } from './helpers.js'
import { dropPostgresSchema, freshPostgresSchema, POSTGRES_TEST_URL } from './postgres-helpers.js'

/** A TCP proxy to the test server that can be shut (connections cut) and opened again. */
async function proxyTo(target: URL) {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const open = async () => {
    server = createServer((client) => {
      const upstream = tcpConnect(Number(target.port || 5432), target.hostname)
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on('close', () => sockets.delete(s))
        s.on('error', () => undefined)
      }
      client.pipe(upstream).pipe(client)
    })
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  }
  const shut = async () => {
    const closed = new Promise<void>((resolve) => server!.close(() => resolve()))
    for (const s of sockets) s.destroy()
    await closed
  }
  await open()
  const url = new URL(target.href)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return { url: url.href, shut, open }
}

const schemas: string[] = []
afterAll(async () => {
  for (const schema of schemas) await dropPostgresSchema(POSTGRES_TEST_URL!, schema)
})

describe.runIf(POSTGRES_TEST_URL !== undefined)('PostgreSQL unreachable under a relay', () => {
  it('publishes and reads answer 503 with Retry-After, and work again once it is back', async () => {
    const proxy = await proxyTo(new URL(POSTGRES_TEST_URL!))
    const schema = freshPostgresSchema()
    schemas.push(schema)
    const heard: unknown[] = []
    const store = await openPostgresRelayStore({
      connectionString: proxy.url,
      schema,
      onError: (error) => heard.push(error),
    })
    const relay = await startRelay({ store })
    try {
      const alice = await fixtureAgent()
      const bob = await fixtureAgent()
      await relay.client.subscribe(bob)
      const first = await signedMessage(alice, bob.id)
      expect((await relay.client.publish(first)).status).toBe(202)

      await proxy.shut()
      const second = await signedMessage(alice, bob.id)
      const refused = await relay.client.publish(second)
      expect(refused.status).toBe(503)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      const body = (await refused.json()) as { code: string; message: string }
      expect(body.code).toBe('unavailable')
      // Nothing about the database reaches the client; the operator hears the cause.
      expect(body.message).not.toMatch(/postgres|ECONN|127\.0\.0\.1|5432/i)
      expect(heard.some(isPostgresUnavailable)).toBe(true)
      const read = await relay.client.request(
        'GET',
        `/relay/messages?agent=${encodeURIComponent(bob.id)}`,
        {
          as: bob,
        },
      )
      expect(read.status).toBe(503)
      await read.arrayBuffer()

      await proxy.open()
      // The pool replaces its broken connections: the same relay stores again.
      let status = 0
      for (let i = 0; i < 50 && status !== 202; i++) {
        const again = await relay.client.publish(second)
        status = again.status
        await again.arrayBuffer()
        if (status !== 202) await new Promise((resolve) => setTimeout(resolve, 200))
      }
      expect(status).toBe(202)
      const { messages } = await relay.client.retrieve(bob)
      expect(messages.map((m) => m.message_id)).toEqual([first.message_id, second.message_id])
      // The relay's own error channel got the outage as an operator error, not as a crash.
      expect(relay.errors.every((e) => !isAgentMsgError(e))).toBe(true)
      relay.errors.length = 0
    } finally {
      await relay.stop()
    }
  })
})
