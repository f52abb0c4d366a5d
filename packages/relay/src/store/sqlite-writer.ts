/**
 * The SQLite store's writer: a worker owning the write connection (better-sqlite3 is
 * synchronous; a COMMIT's fsync would block the main thread). A batch is ONE transaction,
 * answered after its COMMIT (PROFILE §9); an unexpected error rolls it back and its writes run
 * again one transaction each, so only that one fails. Main → writer: ops (a batch), `close`;
 * writer → main: `{outcomes, commits}`, or `{fatal}` when it cannot open (then it exits).
 */
import { performance } from 'node:perf_hooks'
import { type MessagePort, parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import type { WriteOp } from './commit-queue.js'
import type { ResolvedQuota } from './common.js'
import { configureSqliteConnection } from './sqlite-schema.js'
import { sqliteWrites } from './sqlite-writes.js'

/** What a batch's COMMIT covered, for metrics and benchmarks. */
export interface SqliteCommitInfo {
  /** Writes in the batch. */
  size: number
  publishes: number
  /** BEGIN to the end of COMMIT (ms). */
  ms: number
}

export interface SqliteWriterData {
  /** Never `':memory:'`: the main thread reads the same file. */
  path: string
  quota: ResolvedQuota
  busyTimeoutMs: number
}

/** An error crossing the thread boundary (structured clone drops the class and `code`). */
export type WireError = { name: string; message: string; code?: unknown }

export type WireOutcome = { ok: unknown } | { error: WireError }

type Batch = { outcomes: WireOutcome[]; commits: SqliteCommitInfo[] }
/** `decided`: a batch's outcomes before its COMMIT (PublishHooks.decided), then the Batch. */
export type FromWriter = Batch | { decided: unknown[] } | { fatal: WireError }

/**
 * Cursors reserved ahead by a committed `cursor_floor`: a batch's outcomes are told before its
 * COMMIT only while its cursors are under the floor, and after a restart or a lost COMMIT the
 * cursors go on above it, so a cursor pushed before a COMMIT that never came is never reused.
 */
const RESERVE = 65_536

export function errorToWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) }
  const { code } = error as { code?: unknown }
  return { name: error.name, message: error.message, ...(code !== undefined && { code }) }
}

/** Run `f`, ignoring what it throws (a connection that may be unusable). */
function quietly(f: () => unknown): void {
  try {
    f()
  } catch {
    // Reported elsewhere, or nothing is left to report it to.
  }
}

function serve(db: Database.Database, data: SqliteWriterData, port: MessagePort): void {
  const run = sqliteWrites(db, data.quota)
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  // An unusable connection: the next BEGIN reports it.
  const rollbackQuietly = () => quietly(() => db.inTransaction && rollback.run())
  const publishes = (ops: WriteOp[]) => ops.filter((op) => op.op === 'publish').length
  const lastCursor = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").pluck()
  const raise = db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'entries' AND seq < ?")
  const seed = db.prepare(
    "INSERT INTO sqlite_sequence (name, seq) SELECT 'entries', ? WHERE NOT EXISTS " +
      "(SELECT 1 FROM sqlite_sequence WHERE name = 'entries')",
  )
  const floorOf = db.prepare("SELECT value FROM meta WHERE name = 'cursor_floor'").pluck()
  const setFloor = db.prepare(
    "INSERT INTO meta (name, value) VALUES ('cursor_floor', ?) " +
      'ON CONFLICT (name) DO UPDATE SET value = excluded.value',
  )
  /** Durable: no cursor up to it is given again. */
  let floor = Number(floorOf.get() ?? 0)
  /** At open, and after a COMMIT lost once its outcomes were told: cursors go on above `floor`. */
  let jump = true

  /** One transaction; a write failing it (`split`): each write again in a transaction of its own. */
  function batch(ops: WriteOp[], split = true): Batch {
    const outcomes: Array<{ ok: unknown }> = []
    const start = performance.now()
    try {
      begin.run()
      if (jump && floor > 0 && raise.run(floor, floor).changes === 0) seed.run(floor)
      let next = floor
      try {
        for (const op of ops) outcomes.push({ ok: run(op) })
        const last = Number(lastCursor.get() ?? 0)
        if (last + RESERVE / 2 > floor) setFloor.run((next = last + RESERVE))
        if (split && last <= floor && ops.some((op) => op.op === 'publish')) {
          port.postMessage({ decided: outcomes.map((o) => o.ok) } satisfies FromWriter)
          jump = true
        }
      } catch (error) {
        rollbackQuietly()
        if (!split) throw error
        const each = ops.map((op) => batch([op], false))
        return {
          outcomes: each.flatMap((b) => b.outcomes),
          commits: each.flatMap((b) => b.commits),
        }
      }
      commit.run()
      floor = next
      jump = false
    } catch (error) {
      // BEGIN, COMMIT or the one write failed: nothing of the batch is stored.
      rollbackQuietly()
      return { outcomes: ops.map(() => ({ error: errorToWire(error) })), commits: [] }
    }
    const ms = performance.now() - start
    return { outcomes, commits: [{ size: ops.length, publishes: publishes(ops), ms }] }
  }

  port.on('message', (message: WriteOp[] | 'close') => {
    if (message !== 'close') return port.postMessage(batch(message))
    // Best effort: every batch was answered already.
    quietly(() => db.close())
    port.close()
  })
}

function main(port: MessagePort, data: SqliteWriterData): void {
  let db: Database.Database | undefined
  try {
    db = new Database(data.path)
    configureSqliteConnection(db, data.busyTimeoutMs)
  } catch (error) {
    // The open error is the one to report.
    quietly(() => db?.close())
    // Nothing listens on the port afterwards, so the worker exits.
    port.postMessage({ fatal: errorToWire(error) } satisfies FromWriter)
    return
  }
  serve(db, data, port)
}

if (parentPort !== null) main(parentPort, workerData as SqliteWriterData)
