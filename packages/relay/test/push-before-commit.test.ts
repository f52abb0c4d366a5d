/**
 * Push before the commit (protocol decision 34): a store tells a publish's outcome before its
 * COMMIT; an ack made then is applied after the COMMIT; the relay pushes the entry to a live
 * WebSocket before the publisher's 202, and counts a commit that failed after a push.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { signWsAuth } from '@agentmsg/core/receive'
import { afterAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { RelayMetrics } from '../src/server/relay-metrics.js'
import { sqliteRelayStore } from '../src/store/sqlite.js'
import type { PublishInput, RelayStore, StorePublishResult } from '../src/store/types.js'
import { relayPerTest, type TestRelay, until } from './helpers.js'
import { POSTGRES_TEST_URL, postgresTestNodes } from './postgres-helpers.js'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const sqlite = () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentmsg-push-'))
  dirs.push(dir)
  return sqliteRelayStore({ path: join(dir, 'relay.db') })
}

const NOW = Date.now()
const input = (id: string): PublishInput => ({
  mailboxes: ['bob'],
  from: 'did:key:z6MkAlice',
  messageId: id,
  json: JSON.stringify({ message_id: id }),
  bytes: 20,
  receivedAt: NOW,
  expiresAt: NOW + 60_000,
})

/** Publish `id`, acking it from the `decided` hook, before the COMMIT. */
async function ackWhenDecided(store: RelayStore, id: string) {
  let told: StorePublishResult[] | undefined
  let ack: Promise<number> | undefined
  let settled = false
  let settledWhenTold: boolean | undefined
  const published = store.publish(input(id), {
    decided: (results) => {
      told = results
      settledWhenTold = settled
      ack = store.ack('bob', id, 'did:key:z6MkAlice')
    },
  })
  const results = await published.finally(() => (settled = true))
  return { told, settledWhenTold, results, removed: await ack }
}

const pg = postgresTestNodes()
const stores: Array<[string, () => Promise<RelayStore>]> = [['SQLite', async () => sqlite()]]
if (POSTGRES_TEST_URL) stores.push(['PostgreSQL', async () => (await pg.nodes(1)).all[0]!])
describe.each(stores)('%s store: outcomes told before the commit', (name, open) => {
  it('tells the cursor the commit makes durable; an ack made then is applied after it', async () => {
    const store = await open()
    // The first batch after an open is not told early (its cursors jump past the floor).
    await store.publish(input('m0'))
    const { told, settledWhenTold, results, removed } = await ackWhenDecided(store, 'm1')
    // Told before the COMMIT answered.
    expect(settledWhenTold).toBe(false)
    expect(told).toEqual(results)
    expect(results[0]).toMatchObject({ mailbox: 'bob', duplicate: false })
    expect(removed).toBe(1)
    expect(await store.usage('bob')).toEqual({ messages: 1, bytes: 20 })
    // A copy published again is remembered: a duplicate, not told as new.
    expect((await store.publish(input('m1')))[0]!.duplicate).toBe(true)
    if (name === 'SQLite') await store.close()
  })
})

// ---- the relay -----------------------------------------------------------------------------

const { start } = relayPerTest()

/** A real SQLite store whose publishes answer only once `release()` (or fail with `lose`). */
function heldStore(inner: RelayStore) {
  let gate = Promise.resolve()
  let open = () => {}
  let lose = false
  const store = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'publish') {
        return async (...args: Parameters<RelayStore['publish']>) => {
          const results = await target.publish(...args)
          await gate
          if (lose) throw new Error('the COMMIT was lost')
          return results
        }
      }
      const value: unknown = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return {
    store,
    hold: (failing = false) => {
      lose = failing
      gate = new Promise((resolve) => (open = resolve))
    },
    release: () => open(),
  }
}

/** Bob's WebSocket, authenticated; the message frames it got. */
async function bobStream(r: TestRelay, bob: Awaited<ReturnType<typeof fixtureAgent>>) {
  const ws = new WebSocket(`${r.url.replace(/^https/, 'wss')}/relay/ws`, { ca: r.cert.ca })
  const frames: Array<{ cursor: string; message: { message_id: string } }> = []
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject)
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data))
      if (frame.type === 'message') frames.push(frame)
      if (frame.type !== 'challenge') return
      const auth = { relayBaseUrl: r.url, nonce: frame.nonce, signer: bob.signer, agent: bob.id }
      signWsAuth(auth).then((a) => resolve(ws.send(JSON.stringify(a))), reject)
    })
  })
  return { ws, frames }
}

describe('the relay pushes before the commit', () => {
  it("pushes to a live stream before the publisher's 202, and takes the ack made meanwhile", async () => {
    const held = heldStore(sqlite())
    const metrics = new RelayMetrics(held.store)
    const r = await start({ store: held.store, observer: metrics })
    const [alice, bob] = [await fixtureAgent(), await fixtureAgent()]
    await r.client.subscribe(bob)
    const { ws, frames } = await bobStream(r, bob)
    // A first publish: its batch is not told early (the first after the store opened).
    expect((await r.client.publish(await signedMessage(alice, bob.id))).status).toBe(202)
    await until(() => frames.length === 1)

    held.hold()
    const message = await signedMessage(alice, bob.id)
    let answered = false
    const publishing = r.client.publish(message).finally(() => (answered = true))
    await until(() => frames.length === 2)
    expect(frames[1]!.message.message_id).toBe(message.message_id)
    expect(answered).toBe(false)
    ws.send(JSON.stringify({ type: 'ack', message_id: message.message_id, from: alice.id }))
    held.release()
    expect((await publishing).status).toBe(202)
    await until(async () => (await held.store.usage(bob.id)).messages === 1)

    // A commit lost after its push: no 202 (the publisher retries), counted and logged.
    held.hold(true)
    const lost = await signedMessage(alice, bob.id)
    const failing = r.client.publish(lost)
    await until(() => frames.length === 3)
    held.release()
    expect((await failing).status).toBe(500)
    const text = await metrics.registry.metrics()
    expect(text).toMatch(/^agentmsg_relay_commit_failed_after_push_total 1$/m)
    expect(r.errors).toHaveLength(2) // the lost commit, and the publish's internal error
    r.errors.length = 0
    ws.close()
  })
})
