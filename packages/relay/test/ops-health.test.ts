/**
 * Issue 14: `GET /healthz` and `GET /readyz` of a real HTTPS relay on SQLite. Readiness fails
 * while the relay drains, and when the store cannot take a write: its writer thread gone, or the
 * database held by another connection's write lock (a real SQLite lock).
 *
 * `node:worker_threads` is wrapped only to record the store's writer: it is the real worker,
 * and the test ends it as a crash would.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Worker } from 'node:worker_threads'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import Database from 'better-sqlite3'
import { describe, expect, it, vi } from 'vitest'
import { sqliteRelayStore } from '../src/store/sqlite.js'
import type { RelayStore } from '../src/store/types.js'
import { relayPerTest, startRelay, until } from './helpers.js'

const workers = vi.hoisted(() => [] as Worker[])
vi.mock('node:worker_threads', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:worker_threads')>()
  class RecordedWorker extends actual.Worker {
    constructor(...args: ConstructorParameters<typeof actual.Worker>) {
      super(...args)
      workers.push(this)
    }
  }
  return { ...actual, Worker: RecordedWorker }
})

const { start, defer } = relayPerTest()

async function probe(
  fetchFn: typeof fetch,
  url: string,
  method = 'GET',
): Promise<{ status: number; body: string; retryAfter: string | null }> {
  const res = await fetchFn(url, { method })
  return { status: res.status, body: await res.text(), retryAfter: res.headers.get('retry-after') }
}

describe('health', () => {
  it('answers healthz and readyz with no details, uncharged to the per-address limit', async () => {
    const r = await start({ limits: { perAddress: { perMinute: 1, burst: 2 } } })
    const f = r.client.fetch
    for (let i = 0; i < 10; i++) {
      expect(await probe(f, `${r.url}/healthz`)).toEqual({
        status: 200,
        body: '{"status":"ok"}',
        retryAfter: null,
      })
      expect(await probe(f, `${r.url}/readyz`)).toEqual({
        status: 200,
        body: '{"status":"ok"}',
        retryAfter: null,
      })
    }
    expect((await probe(f, `${r.url}/readyz`, 'HEAD')).status).toBe(200)
    expect((await probe(f, `${r.url}/healthz`, 'POST')).status).toBe(405)
    // The probes took none of the address's 2 tokens.
    const bob = await fixtureAgent()
    expect(
      (await r.client.request('GET', `/relay/messages?agent=${encodeURIComponent(bob.id)}`)).status,
    ).toBe(401)
    expect(
      (await r.client.request('GET', `/relay/messages?agent=${encodeURIComponent(bob.id)}`)).status,
    ).toBe(401)
    expect(
      (await r.client.request('GET', `/relay/messages?agent=${encodeURIComponent(bob.id)}`)).status,
    ).toBe(429)
  })

  it('is not ready while another connection holds the write lock, ready again once it lets go', async () => {
    const r = await start({ readyCheck: { timeoutMs: 300, cacheMs: 0 } })
    const f = r.client.fetch
    // Waited for, not asserted at once: a loaded machine may miss the short check's 300 ms.
    await until(async () => (await probe(f, `${r.url}/readyz`)).status === 200)
    const other = new Database(path.join(r.dataDir, 'relay.sqlite'))
    defer(() => void other.close())
    other.exec('BEGIN IMMEDIATE')
    const locked = await probe(f, `${r.url}/readyz`)
    expect(locked).toEqual({ status: 503, body: '{"status":"unavailable"}', retryAfter: '1' })
    expect((await probe(f, `${r.url}/healthz`)).status).toBe(200)
    other.exec('COMMIT')
    await until(async () => (await probe(f, `${r.url}/readyz`)).status === 200)
  })

  it('is not ready once the SQLite writer is gone', async () => {
    const before = workers.length
    const r = await startRelay({ readyCheck: { cacheMs: 0 } })
    try {
      const f = r.client.fetch
      expect((await probe(f, `${r.url}/readyz`)).status).toBe(200)
      expect(workers.length).toBe(before + 1)
      await workers[before]!.terminate()
      expect(await probe(f, `${r.url}/readyz`)).toEqual({
        status: 503,
        body: '{"status":"unavailable"}',
        retryAfter: '1',
      })
      expect((await probe(f, `${r.url}/healthz`)).status).toBe(200)
    } finally {
      await r.stop()
    }
  })

  it('is not ready while draining; the publish in flight is stored and answered 202', async () => {
    // The store on a file of the test's, whose write lock the test holds: the publish waits in
    // the writer (busy timeout long enough) while close() drains.
    const dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-drain-'))
    defer(() => rm(dir, { recursive: true, force: true }))
    const file = path.join(dir, 'relay.sqlite')
    const sqlite = sqliteRelayStore({ path: file, busyTimeoutMs: 60_000 })
    let entered!: () => void
    const inStore = new Promise<void>((resolve) => (entered = resolve))
    const store: RelayStore = Object.create(sqlite) as RelayStore
    store.publish = (input) => {
      entered()
      return sqlite.publish(input)
    }
    const r = await start({ store })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await r.client.subscribe(bob)
    const other = new Database(file)
    defer(() => void other.close())
    other.exec('BEGIN IMMEDIATE')
    const message = await signedMessage(alice, bob.id)
    const pending = r.client.publish(message)
    await inStore
    const closing = r.close()
    // Draining: not ready whatever the store could say; alive still. (The listener accepts no
    // new connection now: the handler is asked directly, as a frontend would.)
    const info = { clientAddress: '127.0.0.1' }
    const res = await r.handler.fetch(new Request(`${r.url}/readyz`), info)
    expect(res.status).toBe(503)
    expect(await res.text()).toBe('{"status":"unavailable"}')
    expect((await r.handler.fetch(new Request(`${r.url}/healthz`), info)).status).toBe(200)
    other.exec('COMMIT')
    expect((await pending).status).toBe(202)
    await closing
    const reopened = sqliteRelayStore({ path: file })
    defer(() => reopened.close())
    const page = await reopened.retrieve(bob.id, { limit: 10, maxBytes: 1 << 20, now: Date.now() })
    expect(page.entries.map((e) => e.messageId)).toEqual([message.message_id])
  })
})
