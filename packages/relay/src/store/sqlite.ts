/**
 * `@agentmsg/relay/sqlite`: the embedded relay store on SQLite, PROFILE §9. Writes are
 * group-committed to a worker owning the write connection; reads use the main thread's own.
 * `':memory:'` cannot be shared by two connections: it is a temporary file, deleted at close.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import { commitQueue, queuedStore, type Settlement, type WriteOp } from './commit-queue.js'
import { bucketHasher, type RelayQuota, resolveQuota } from './common.js'
import { sqliteReads } from './sqlite-reads.js'
import { configureSqliteConnection, createSqliteSchema, sqliteBucketKey } from './sqlite-schema.js'
import type { FromWriter, SqliteCommitInfo, SqliteWriterData, WireError } from './sqlite-writer.js'
import type { RelayStore } from './types.js'

export { SQLITE_SCHEMA_VERSION } from './sqlite-schema.js'
export type { SqliteCommitInfo } from './sqlite-writer.js'

export interface SqliteRelayStoreOptions {
  /** Database file (in the relay's data directory); `':memory:'` for tests (not durable). */
  path: string
  /** @default PROFILE §9: 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB */
  quota?: RelayQuota
  /** How queued writes are committed together (on the writer thread). */
  groupCommit?: {
    /** Flush as soon as this many writes are queued. @default 1024 */
    maxBatch?: number
    /** Wait at most this long for more writes (ms); 0 flushes on the next macrotask. @default 0 */
    maxDelayMs?: number
  }
  /** Called after each committed batch. */
  onCommit?: (info: SqliteCommitInfo) => void
  /** How long to wait for another connection's write lock (ms). @default 5000 */
  busyTimeoutMs?: number
}

/** better-sqlite3 is an optional peer dependency: missing, a store cannot open (one line why). */
const Sqlite = await import('better-sqlite3').then(
  (m) => m.default,
  (error: { code?: string }) => {
    if (error.code !== 'ERR_MODULE_NOT_FOUND') throw error
    return undefined
  },
)

/** True when `moduleUrl` is a TypeScript source (tests, examples), not built code. */
export const isTypeScriptModule = (moduleUrl: string | URL): boolean =>
  /\.[cm]?ts$/.test(new URL(moduleUrl).pathname)

/** A worker inherits its parent's `execArgv`, but `--input-type` makes a file entry refused. */
export const sqliteWriterExecArgv = (parent: readonly string[]): string[] =>
  parent.filter((arg, i) => !arg.startsWith('--input-type') && parent[i - 1] !== '--input-type')

/** The writer next to this module: dist/sqlite-writer.js built, the `.ts` source under a loader. */
function startWriter(workerData: SqliteWriterData): Worker {
  const source = isTypeScriptModule(import.meta.url)
  const execArgv = sqliteWriterExecArgv(process.execArgv)
  if (source) execArgv.push('--import', new URL('./sqlite-writer-dev.mjs', import.meta.url).href)
  const writer = new URL(source ? './sqlite-writer.ts' : './sqlite-writer.js', import.meta.url)
  return new Worker(writer, { workerData, execArgv })
}

const errorFromWire = ({ name, message, code }: WireError): Error =>
  Object.assign(new Error(message), { name }, code !== undefined && { code })

/** Open (creating the schema if needed) a SQLite relay store. */
export function sqliteRelayStore(options: SqliteRelayStoreOptions): RelayStore {
  if (Sqlite === undefined) {
    throw new Error('the SQLite relay store needs better-sqlite3: npm install better-sqlite3')
  }
  const quota = resolveQuota(options.quota)
  const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))
  const temp = options.path === ':memory:' || options.path === ''
  const tempDir = temp ? mkdtempSync(join(tmpdir(), 'agentmsg-relay-')) : undefined
  const path = tempDir ? join(tempDir, 'relay.db') : options.path
  const removeTemp = () => tempDir && rmSync(tempDir, { recursive: true, force: true })
  let db: Database.Database | undefined
  let worker: Worker
  try {
    // The main thread's connection: creates the schema, then only reads.
    db = new Sqlite(path)
    configureSqliteConnection(db, busyTimeoutMs)
    createSqliteSchema(db)
    db.pragma('query_only = ON')
    worker = startWriter({ path, quota, busyTimeoutMs })
  } catch (error) {
    db?.close()
    removeTemp()
    throw error
  }
  // Keep the process alive only while a batch is in flight (as a synchronous store would).
  worker.unref()
  type Pending = { resolve(s: Settlement[]): void; reject(e: unknown): void }
  let pending: (Pending & { decided(outcomes: unknown[]): void }) | undefined
  let failed = false
  const queue = commitQueue<WriteOp>(
    (ops, decided) =>
      new Promise((resolve, reject) => {
        pending = { resolve, reject, decided }
        worker.ref()
        worker.postMessage(ops)
      }),
    Math.max(1, Math.floor(options.groupCommit?.maxBatch ?? 1024)),
    Math.max(0, options.groupCommit?.maxDelayMs ?? 0),
  )
  const gone = (error: Error) => {
    failed = true
    queue.fail(error)
    pending?.reject(error)
    pending = undefined
  }
  worker.on('message', (message: FromWriter) => {
    if ('fatal' in message) return gone(errorFromWire(message.fatal))
    if ('decided' in message) return pending?.decided(message.decided)
    worker.unref()
    for (const info of message.commits) {
      try {
        options.onCommit?.(info)
      } catch {
        // A metrics hook must not break the store.
      }
    }
    const settle = pending
    pending = undefined
    settle?.resolve(
      message.outcomes.map((o) => ('ok' in o ? o : { error: errorFromWire(o.error) })),
    )
  })
  worker.on('error', gone)
  worker.on('exit', (code) => gone(new Error(`relay store writer exited (code ${code})`)))

  return queuedStore(queue, sqliteReads(db), bucketHasher(sqliteBucketKey(db)), async () => {
    await queue.close()
    if (failed) await worker.terminate()
    else {
      await new Promise((resolve) => {
        worker.once('exit', resolve)
        worker.ref()
        worker.postMessage('close')
      })
    }
    db.close()
    removeTemp()
  })
}
