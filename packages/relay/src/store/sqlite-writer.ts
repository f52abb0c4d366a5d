/**
 * The SQLite relay store's writer: the entry module of a `worker_threads` worker that owns the
 * write connection (built as its own file, `dist/sqlite-writer.js`, next to the store; started
 * by sqlite-writer-start.ts). better-sqlite3 is synchronous, and a COMMIT's fsync takes
 * milliseconds the main thread's event loop would otherwise spend blocked.
 *
 * Group commit: each batch the store sends runs in ONE transaction, hence one fsync, and is
 * answered only after its COMMIT returned (PROFILE §9: 202 only once durably stored). One
 * write's failure does not fail the others: a full mailbox or relay is decided before that write
 * stores anything, so the batch goes on; an unexpected error (I/O, a bug) rolls the batch back, and its
 * writes run again one transaction each, so only the failing one fails.
 *
 * The messages are typed in sqlite-protocol.ts.
 */
import { performance } from 'node:perf_hooks'
import { type MessagePort, parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import {
  errorToWire,
  type FromSqliteWriter,
  type SqliteCommitInfo,
  type SqliteWriteOp,
  type SqliteWriteOutcome,
  type SqliteWriterData,
  type ToSqliteWriter,
} from './sqlite-protocol.js'
import { configureSqliteConnection } from './sqlite-schema.js'
import {
  SqliteMailboxFull,
  SqliteRelayFull,
  type SqliteWriteRunner,
  sqliteWrites,
} from './sqlite-writes.js'

interface BatchResult {
  outcomes: SqliteWriteOutcome[]
  commits: SqliteCommitInfo[]
}

function outcomeOf(value: ReturnType<SqliteWriteRunner>): SqliteWriteOutcome {
  if (value instanceof SqliteMailboxFull) return { full: value.mailbox, reason: value.reason }
  if (value instanceof SqliteRelayFull) return { relayFull: true }
  return { ok: value }
}

function countPublishes(ops: SqliteWriteOp[]): number {
  let n = 0
  for (const op of ops) if (op.op === 'publish') n++
  return n
}

/** Run batches on an open connection (schema created by the main thread). */
function serve(db: Database.Database, data: SqliteWriterData, port: MessagePort): void {
  const run = sqliteWrites(db, data.quota)
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  const post = (message: FromSqliteWriter) => port.postMessage(message)

  function rollbackQuietly(): void {
    try {
      if (db.inTransaction) rollback.run()
    } catch {
      // The connection is unusable; the next BEGIN reports it.
    }
  }

  /** Every op in one transaction; on an unexpected error, each op in its own. */
  function runBatch(ops: SqliteWriteOp[]): BatchResult {
    const outcomes: SqliteWriteOutcome[] = []
    const start = performance.now()
    try {
      begin.run()
      try {
        for (const op of ops) outcomes.push(outcomeOf(run(op)))
      } catch {
        rollbackQuietly()
        return runAlone(ops)
      }
      commit.run()
    } catch (error) {
      // BEGIN or COMMIT failed: nothing of the batch is stored.
      rollbackQuietly()
      const wire = errorToWire(error)
      return { outcomes: ops.map(() => ({ error: wire })), commits: [] }
    }
    const ms = performance.now() - start
    return { outcomes, commits: [{ size: ops.length, publishes: countPublishes(ops), ms }] }
  }

  function runAlone(ops: SqliteWriteOp[]): BatchResult {
    const outcomes: SqliteWriteOutcome[] = []
    const commits: SqliteCommitInfo[] = []
    for (const op of ops) {
      const start = performance.now()
      let outcome: SqliteWriteOutcome
      try {
        begin.run()
        outcome = outcomeOf(run(op))
        commit.run()
      } catch (error) {
        rollbackQuietly()
        outcomes.push({ error: errorToWire(error) })
        continue
      }
      const publishes = op.op === 'publish' ? 1 : 0
      commits.push({ size: 1, publishes, ms: performance.now() - start })
      outcomes.push(outcome)
    }
    return { outcomes, commits }
  }

  port.on('message', (message: ToSqliteWriter) => {
    if (message.type === 'batch') {
      post({ type: 'done', ...runBatch(message.ops) })
    } else if (message.type === 'close') {
      try {
        db.close()
      } catch {
        // Closing is best effort: every batch was answered already.
      }
      post({ type: 'closed' })
      port.close()
    }
  })
  post({ type: 'ready' })
}

function main(port: MessagePort, data: SqliteWriterData): void {
  let db: Database.Database | undefined
  try {
    db = new Database(data.path)
    configureSqliteConnection(db, data.busyTimeoutMs)
  } catch (error) {
    try {
      db?.close()
    } catch {
      // Already failing; the open error is the one to report.
    }
    // Nothing listens on the port afterwards, so the worker exits.
    port.postMessage({ type: 'fatal', error: errorToWire(error) } satisfies FromSqliteWriter)
    return
  }
  serve(db, data, port)
}

if (parentPort === null) throw new Error('sqlite-writer runs as a worker_threads worker')
main(parentPort, workerData as SqliteWriterData)
