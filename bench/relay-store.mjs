/**
 * Relay store throughput: durable publishes/s of ~1 KB direct messages, `CONCURRENCY`
 * publishers each awaiting its publish before the next, through `sqliteRelayStore` (a file in a
 * temp dir, WAL, synchronous = FULL, group commit) — against raw better-sqlite3 inserting the
 * same rows (one `messages` row and one `entries` row per message) into the same schema, with
 * the same pragmas, in the same temp dir, committing in EXACTLY the batches the store's group
 * commit used during its measured run (recorded through `onCommit`).
 *
 * The ratio is therefore what the store costs beyond the bare inserts and fsyncs: duplicate and
 * quota checks, the per-mailbox usage counters, promises. The two alternate in short rounds
 * (the store for ~300 ms, then raw replaying that round's batches), so that a shared disk's
 * drift hits both alike; the figures are totals over the rounds.
 *
 * Standalone (after `npm run build`): `node bench/relay-store.mjs`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { sqliteRelayStore } from '@agentmsg/relay/sqlite'
import Database from 'better-sqlite3'
import { printTable } from './lib.mjs'

const CONCURRENCY = 256
const MESSAGE_BYTES = 1024
const WARMUP_MS = 500
const ROUND_MS = 300
const ROUNDS = 12
const FROM = 'did:key:z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2'
const WEEK = 7 * 24 * 3600 * 1000

/** A ~1 KB message JSON (the relay stores the JSON text as received, trace appended). */
function messageJson(id) {
  const base = {
    agentmsg: 5,
    message_id: id,
    from: { agent: FROM },
    to: { agent: 'did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH' },
    date: new Date().toISOString(),
    body: '',
  }
  const overhead = Buffer.byteLength(JSON.stringify(base))
  base.body = 'b'.repeat(MESSAGE_BYTES - overhead)
  return JSON.stringify(base)
}

const JSON_TEXT = messageJson('00000000-0000-4000-8000-000000000000')
const BYTES = Buffer.byteLength(JSON_TEXT)
const mailboxOf = (worker) => `did:key:z6MkRecipient${worker}`

function median(values) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

/** The store with `CONCURRENCY` publishers; `phase(ms)` runs them and records the batches. */
function storeRunner(path) {
  let batches = []
  const store = sqliteRelayStore({ path, onCommit: (info) => batches.push(info.size) })
  let seq = 0
  const now = Date.now()
  async function phase(ms) {
    batches = []
    let n = 0
    const end = performance.now() + ms
    const worker = async (w) => {
      const mailbox = mailboxOf(w)
      while (performance.now() < end) {
        await store.publish({
          mailboxes: [mailbox],
          from: FROM,
          messageId: `m-${seq++}`,
          json: JSON_TEXT,
          bytes: BYTES,
          receivedAt: now,
          expiresAt: now + WEEK,
        })
        n++
      }
    }
    const start = performance.now()
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)))
    return { n, ms: performance.now() - start, batches }
  }
  return { phase, close: () => store.close() }
}

/** Raw better-sqlite3 on the store's schema and pragmas; `replay(batches)` commits the same batches. */
async function rawRunner(path) {
  // The same schema: let the store create it, then write to it directly.
  await sqliteRelayStore({ path }).close()
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const insertMessage = db.prepare(
    'INSERT INTO messages (from_agent, message_id, json, bytes, received_at, expires_at, forget_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const insertEntry = db.prepare(
    'INSERT INTO entries (mailbox, message_ref, from_agent, message_id, bytes) VALUES (?, ?, ?, ?, ?)',
  )
  const now = Date.now()
  let seq = 0
  let worker = 0
  function replay(batches) {
    let n = 0
    const start = performance.now()
    for (const size of batches) {
      begin.run()
      for (let i = 0; i < size; i++) {
        const id = `m-${seq++}`
        const ref = insertMessage.run(
          FROM,
          id,
          JSON_TEXT,
          BYTES,
          now,
          now + WEEK,
          now + WEEK,
        ).lastInsertRowid
        insertEntry.run(mailboxOf(worker), ref, FROM, id, BYTES)
        worker = (worker + 1) % CONCURRENCY
      }
      commit.run()
      n += size
    }
    return { n, ms: performance.now() - start }
  }
  return { replay, close: () => db.close() }
}

export async function benchRelayStore() {
  const dir = mkdtempSync(join(tmpdir(), 'relay-bench-'))
  try {
    const ours = storeRunner(join(dir, 'store.db'))
    const raw = await rawRunner(join(dir, 'raw.db'))
    // Short alternating rounds, so that a shared disk's drift hits both sides alike.
    raw.replay((await ours.phase(WARMUP_MS)).batches)
    const sizes = []
    let oursN = 0
    let oursMs = 0
    let rawN = 0
    let rawMs = 0
    for (let round = 0; round < ROUNDS; round++) {
      const run = await ours.phase(ROUND_MS)
      const base = raw.replay(run.batches)
      sizes.push(...run.batches)
      oursN += run.n
      oursMs += run.ms
      rawN += base.n
      rawMs += base.ms
    }
    await ours.close()
    raw.close()
    const value = (oursN * 1000) / oursMs
    const baseline = (rawN * 1000) / rawMs
    const sorted = [...sizes].sort((a, b) => a - b)
    const mean = sizes.reduce((a, b) => a + b, 0) / sizes.length
    return [
      {
        name: `durable publish, ${BYTES} B, ${CONCURRENCY} concurrent (WAL, synchronous=FULL)`,
        value,
        unit: 'msg/s',
        baseline,
        baselineName: 'raw better-sqlite3 inserts, same batches',
        ratio: value / baseline,
        target: '≥ 0.7×',
      },
      {
        name: `group-commit batch size (mean; min ${sorted[0]}, median ${median(sorted)}, max ${sorted[sorted.length - 1]}; ${sizes.length} commits)`,
        value: mean,
        unit: 'writes/commit',
      },
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printTable(
    'relay store (SQLite, durable) vs raw better-sqlite3 with the same batching',
    await benchRelayStore(),
  )
}
