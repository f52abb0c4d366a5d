/**
 * The embedded relay store on SQLite (better-sqlite3), PROFILE §9.
 *
 * Durability: `journal_mode = WAL`, `synchronous = FULL` — every commit syncs the WAL before it
 * returns, and a write's promise resolves only after the COMMIT covering it returned.
 *
 * Writes run off the main thread: a `worker_threads` worker owns the write connection (see
 * sqlite-writer.ts; its code is an eval'd string so that it survives bundling). better-sqlite3
 * is synchronous, and a commit's fsync takes milliseconds that the event loop would otherwise
 * spend blocked.
 *
 * Group commit: every write (publish, ack, subscribe, unsubscribe, setWebhookVerified, expire)
 * is queued; the worker runs a batch of them in ONE transaction, hence one fsync. One batch is
 * in flight at a time: whatever is queued while the worker commits goes out as the next batch
 * as soon as that commit returned, so batches grow with the load (at most `maxBatch` writes).
 * When idle, a batch goes on the next macrotask (`setImmediate`), after `maxDelayMs` when that
 * is set, or at once when `maxBatch` writes are queued.
 *
 * One write's failure does not fail the others. An expected refusal (a full mailbox) is decided
 * before that write changes anything, so the batch goes on. An unexpected error (I/O, a bug)
 * rolls the batch back, and its writes are then run again one transaction each, so only the
 * failing one fails.
 *
 * Reads (retrieve, usage, mailboxState, subscriptions, topicSubscribers) run on the main
 * thread's own connection, which only reads (it creates or migrates the schema at open). In WAL
 * mode a reader sees the last commit, never a write in progress: a write whose promise has not
 * resolved yet is not visible — which is what a client may expect, since the relay has not
 * answered for it either. `':memory:'` cannot be shared by two connections, so it stands for a
 * private temporary file, deleted at close.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import Database from 'better-sqlite3'
import {
  checkRetrieveOptions,
  newSubscriptionId,
  parseAfter,
  publishMailboxes,
  resolveQuota,
  uniqueTopics,
  type RelayQuota,
} from './common.js'
import {
  MailboxFullError,
  type MailboxEntry,
  type MailboxPage,
  type PublishInput,
  type PublishResult,
  type RelayStore,
  type Subscription,
  type WebhookTarget,
} from './types.js'
import { WRITER_SOURCE } from './sqlite-writer.js'

/** What a batch of the group commit did, for metrics and benchmarks. */
export interface SqliteCommitInfo {
  /** Writes in the batch (publishes and other writes). */
  size: number
  /** Publishes among them. */
  publishes: number
  /** Time from BEGIN to the end of COMMIT (ms). */
  ms: number
}

export interface SqliteRelayStoreOptions {
  /** Database file (in the relay's data directory); `':memory:'` for tests (not durable). */
  path: string
  /** Per-mailbox quota (default 10,000 messages or 256 MiB). */
  quota?: RelayQuota
  groupCommit?: {
    /** Flush as soon as this many writes are queued (default 1024). */
    maxBatch?: number
    /** Wait at most this long for more writes (ms); 0 (default) flushes on the next macrotask. */
    maxDelayMs?: number
  }
  /** Called after each committed batch. */
  onCommit?: (info: SqliteCommitInfo) => void
  /** How long to wait for another connection's write lock (ms, default 5000). */
  busyTimeoutMs?: number
}

/** The schema version this code writes (`PRAGMA user_version`). */
export const SQLITE_SCHEMA_VERSION = 1

const SCHEMA_V1 = `
CREATE TABLE messages (
  id INTEGER PRIMARY KEY,
  from_agent TEXT NOT NULL,
  message_id TEXT NOT NULL,
  json TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX messages_expires ON messages (expires_at);

CREATE TABLE entries (
  cursor INTEGER PRIMARY KEY AUTOINCREMENT,
  mailbox TEXT NOT NULL,
  message_ref INTEGER NOT NULL REFERENCES messages (id),
  from_agent TEXT NOT NULL,
  message_id TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  UNIQUE (mailbox, message_id, from_agent)
);
CREATE INDEX entries_mailbox_cursor ON entries (mailbox, cursor);
CREATE INDEX entries_message ON entries (message_ref);

CREATE TABLE mailboxes (
  agent TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('none', 'open', 'closed')),
  messages INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE subscriptions (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  topics TEXT NOT NULL,
  webhook_url TEXT,
  webhook_verified INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL
);
CREATE INDEX subscriptions_agent ON subscriptions (agent);

CREATE TABLE subscription_topics (
  topic TEXT NOT NULL,
  subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  PRIMARY KEY (topic, subscription_id)
) WITHOUT ROWID;
CREATE INDEX subscription_topics_subscription ON subscription_topics (subscription_id);
`

function migrate(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version > SQLITE_SCHEMA_VERSION) {
    throw new Error(
      `relay database schema version ${version} is newer than this relay (${SQLITE_SCHEMA_VERSION})`,
    )
  }
  if (version === SQLITE_SCHEMA_VERSION) return
  db.transaction(() => {
    if (version < 1) db.exec(SCHEMA_V1)
    // Later versions: `if (version < 2) db.exec(MIGRATION_V2)`, …
    db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`)
  }).immediate()
}

/** A write for the worker (see sqlite-writer.ts). */
type WriteOp =
  | { t: 'pub'; input: PublishInput; mailboxes: string[] }
  | { t: 'ack'; mailbox: string; messageId: string; from: string | undefined }
  | { t: 'exp'; now: number }
  | {
      t: 'sub'
      id: string
      agent: string
      topics: string[]
      webhookUrl: string | null
      verified: boolean
      created: number
    }
  | { t: 'unsub'; id: string; agent: string }
  | { t: 'ver'; id: string; verified: boolean }

interface QueuedWrite {
  op: WriteOp
  resolve: (value: never) => void
  reject: (error: unknown) => void
}

interface WireError {
  name: string
  message: string
  code?: unknown
}

type WireOutcome = { ok: unknown } | { full: string } | { error: WireError }

type FromWorker =
  | { type: 'ready' }
  | { type: 'fatal'; error: WireError }
  | { type: 'done'; outcomes: WireOutcome[]; commits: SqliteCommitInfo[] }
  | { type: 'closed' }

interface SubscriptionRow {
  id: string
  agent: string
  topics: string
  webhook_url: string | null
  webhook_verified: number
  created: number
}

interface EntryRow {
  cursor: number
  from_agent: string
  message_id: string
  json: string
  bytes: number
}

function errorFromWire(wire: WireError): Error {
  const error = new Error(wire.message)
  error.name = wire.name
  if (wire.code !== undefined) (error as Error & { code?: unknown }).code = wire.code
  return error
}

/** The file better-sqlite3 was loaded from, for the worker to load the same one. */
function betterSqlitePath(): string {
  const require = createRequire(import.meta.url)
  // An ESM import of a CommonJS package goes through the CommonJS loader, hence its cache —
  // wherever a bundler put this module.
  for (const mod of Object.values(require.cache)) {
    if (mod?.exports === Database) return mod.filename
  }
  try {
    return require.resolve('better-sqlite3')
  } catch {
    return 'better-sqlite3' // resolved from the working directory by the worker
  }
}

/** Open (creating or migrating) a SQLite relay store. */
export function sqliteRelayStore(options: SqliteRelayStoreOptions): RelayStore {
  const quota = resolveQuota(options.quota)
  const maxBatch = Math.max(1, Math.floor(options.groupCommit?.maxBatch ?? 1024))
  const maxDelayMs = Math.max(0, options.groupCommit?.maxDelayMs ?? 0)
  const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))
  const onCommit = options.onCommit

  let tempDir: string | undefined
  let path = options.path
  if (path === ':memory:' || path === '') {
    tempDir = mkdtempSync(join(tmpdir(), 'agentmsg-relay-'))
    path = join(tempDir, 'relay.db')
  }
  const removeTemp = () => {
    if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true })
  }

  // The main thread's connection: creates or migrates the schema, then only reads.
  let db: Database.Database
  try {
    db = new Database(path)
  } catch (error) {
    removeTemp()
    throw error
  }
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`)
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.pragma('foreign_keys = ON')
    migrate(db)
    db.pragma('query_only = ON')
  } catch (error) {
    db.close()
    removeTemp()
    throw error
  }

  // Retrieve, usage.
  const page = db.prepare(
    'SELECT e.cursor, e.from_agent, e.message_id, m.json, e.bytes FROM entries e ' +
      'JOIN messages m ON m.id = e.message_ref ' +
      'WHERE e.mailbox = ? AND e.cursor > ? AND m.expires_at > ? ORDER BY e.cursor LIMIT ?',
  )
  const usageOf = db.prepare('SELECT messages, bytes FROM mailboxes WHERE agent = ?')
  // Subscriptions.
  const allSubscriptions = db.prepare('SELECT * FROM subscriptions ORDER BY created, rowid')
  const agentSubscriptions = db.prepare(
    'SELECT * FROM subscriptions WHERE agent = ? ORDER BY created, rowid',
  )
  const stateOf = db.prepare('SELECT state FROM mailboxes WHERE agent = ?').pluck()
  const subscribersOf = db
    .prepare(
      'SELECT DISTINCT s.agent FROM subscription_topics t JOIN subscriptions s ON s.id = t.subscription_id ' +
        'WHERE t.topic = ? ORDER BY s.agent',
    )
    .pluck()

  // ---- the writer and the group commit ---------------------------------------------------

  const worker = new Worker(WRITER_SOURCE, {
    eval: true,
    workerData: { sqlite: betterSqlitePath(), path, quota, busyTimeoutMs },
  })
  // Keep the process alive only while writes are pending (as a synchronous store would).
  worker.unref()

  let queue: QueuedWrite[] = []
  let inFlight: QueuedWrite[] | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let immediate: ReturnType<typeof setImmediate> | undefined
  let closed = false
  /** Set when the worker failed or exited: every write fails with it. */
  let broken: Error | undefined
  let idleWaiters: Array<() => void> = []
  /** Writes enqueued so far, and settled so far (batches settle in order). */
  let enqueued = 0
  let settledCount = 0
  let settledWaiters: Array<{ upTo: number; resolve: () => void }> = []
  let workerGone: Promise<void> | undefined

  function schedule(): void {
    if (inFlight !== undefined || timer !== undefined || immediate !== undefined) return
    if (maxDelayMs > 0) timer = setTimeout(flush, maxDelayMs)
    else immediate = setImmediate(flush)
  }

  function unschedule(): void {
    if (timer !== undefined) clearTimeout(timer)
    if (immediate !== undefined) clearImmediate(immediate)
    timer = undefined
    immediate = undefined
  }

  function enqueue<T>(op: WriteOp): Promise<T> {
    if (closed) return Promise.reject(new Error('relay store is closed'))
    if (broken !== undefined) return Promise.reject(broken)
    return new Promise<T>((resolve, reject) => {
      queue.push({ op, resolve: resolve as (value: never) => void, reject })
      enqueued++
      if (queue.length >= maxBatch) flush()
      else schedule()
    })
  }

  /** Send the queued writes (at most `maxBatch`) to the worker unless a batch is in flight. */
  function flush(): void {
    unschedule()
    if (inFlight !== undefined || queue.length === 0) return
    const batch = queue.length > maxBatch ? queue.splice(0, maxBatch) : queue
    if (batch === queue) queue = []
    inFlight = batch
    worker.ref()
    worker.postMessage({ type: 'batch', ops: batch.map((write) => write.op) })
  }

  function whenIdle(): Promise<void> {
    if (inFlight === undefined && queue.length === 0) return Promise.resolve()
    return new Promise((resolve) => idleWaiters.push(resolve))
  }

  function settleIdle(): void {
    if (settledWaiters.length > 0) {
      const waiting: typeof settledWaiters = []
      for (const waiter of settledWaiters) {
        if (waiter.upTo <= settledCount) waiter.resolve()
        else waiting.push(waiter)
      }
      settledWaiters = waiting
    }
    if (inFlight !== undefined || queue.length > 0) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  function fail(error: Error): void {
    if (broken === undefined) broken = error
    unschedule()
    const writes = [...(inFlight ?? []), ...queue]
    inFlight = undefined
    queue = []
    settledCount += writes.length
    for (const write of writes) write.reject(error)
    settleIdle()
  }

  function done(outcomes: WireOutcome[], commits: SqliteCommitInfo[]): void {
    const batch = inFlight ?? []
    inFlight = undefined
    settledCount += batch.length
    // The next batch first: the worker commits it while this one's promises settle.
    if (queue.length > 0) flush()
    else worker.unref()
    if (onCommit !== undefined) {
      for (const info of commits) {
        try {
          onCommit(info)
        } catch {
          // A metrics hook must not break the store.
        }
      }
    }
    for (let i = 0; i < batch.length; i++) {
      const write = batch[i]!
      const outcome = outcomes[i]
      if (outcome === undefined) write.reject(new Error('relay store: no outcome for a write'))
      else if ('ok' in outcome) write.resolve(outcome.ok as never)
      else if ('full' in outcome) write.reject(new MailboxFullError(outcome.full))
      else write.reject(errorFromWire(outcome.error))
    }
    settleIdle()
  }

  worker.on('message', (msg: FromWorker) => {
    switch (msg.type) {
      case 'done':
        done(msg.outcomes, msg.commits)
        return
      case 'fatal':
        fail(errorFromWire(msg.error))
        return
      default:
        return
    }
  })
  worker.on('error', (error) => fail(error))
  worker.on('exit', (code) => {
    fail(new Error(`relay store writer exited (code ${code})`))
  })

  // ---- reads -----------------------------------------------------------------------------

  function readSubscription(row: SubscriptionRow): Subscription {
    const subscription: Subscription = {
      id: row.id,
      agent: row.agent,
      topics: JSON.parse(row.topics) as string[],
      created: row.created,
    }
    if (row.webhook_url !== null) {
      subscription.webhook = { url: row.webhook_url, verified: row.webhook_verified === 1 }
    }
    return subscription
  }

  function assertOpen(): void {
    if (closed) throw new Error('relay store is closed')
  }

  // ---- the store -------------------------------------------------------------------------

  return {
    async subscribe(input: {
      agent: string
      topics: string[]
      webhook?: WebhookTarget
      now: number
    }) {
      const topics = uniqueTopics(input.topics)
      const webhook = input.webhook === undefined ? undefined : { ...input.webhook }
      const subscription: Subscription = {
        id: newSubscriptionId(),
        agent: input.agent,
        topics,
        created: input.now,
      }
      if (webhook !== undefined) subscription.webhook = webhook
      await enqueue<void>({
        t: 'sub',
        id: subscription.id,
        agent: subscription.agent,
        topics,
        webhookUrl: webhook?.url ?? null,
        verified: webhook?.verified === true,
        created: subscription.created,
      })
      return subscription
    },

    unsubscribe(id: string, agent: string) {
      return enqueue<boolean>({ t: 'unsub', id, agent })
    },

    setWebhookVerified(id: string, verified: boolean) {
      return enqueue<void>({ t: 'ver', id, verified })
    },

    async subscriptions(agent?: string) {
      assertOpen()
      const rows = (
        agent === undefined ? allSubscriptions.all() : agentSubscriptions.all(agent)
      ) as SubscriptionRow[]
      return rows.map(readSubscription)
    },

    async mailboxState(agent: string) {
      assertOpen()
      const state = stateOf.get(agent) as 'open' | 'closed' | 'none' | undefined
      return state ?? 'none'
    },

    async topicSubscribers(topic: string) {
      assertOpen()
      return subscribersOf.all(topic) as string[]
    },

    publish(input: PublishInput) {
      let mailboxes: string[]
      try {
        mailboxes = publishMailboxes(input)
      } catch (error) {
        return Promise.reject(error)
      }
      if (mailboxes.length === 0) {
        return closed ? Promise.reject(new Error('relay store is closed')) : Promise.resolve([])
      }
      return enqueue<PublishResult[]>({ t: 'pub', input, mailboxes })
    },

    async retrieve(
      mailbox: string,
      opts: { after?: string; limit: number; maxBytes: number; now: number },
    ) {
      assertOpen()
      checkRetrieveOptions(opts)
      const after = parseAfter(opts.after)
      const entries: MailboxEntry[] = []
      let bytes = 0
      for (const row of page.iterate(
        mailbox,
        after,
        opts.now,
        opts.limit,
      ) as IterableIterator<EntryRow>) {
        if (entries.length > 0 && bytes + row.bytes > opts.maxBytes) break
        bytes += row.bytes
        entries.push({
          cursor: String(row.cursor),
          from: row.from_agent,
          messageId: row.message_id,
          json: row.json,
        })
      }
      const last = entries[entries.length - 1]
      return {
        entries,
        cursor: last === undefined ? opts.after : last.cursor,
      } satisfies MailboxPage
    },

    settled() {
      if (settledCount >= enqueued) return Promise.resolve()
      const upTo = enqueued
      return new Promise<void>((resolve) => settledWaiters.push({ upTo, resolve }))
    },

    ack(mailbox: string, messageId: string, from?: string) {
      return enqueue<number>({ t: 'ack', mailbox, messageId, from })
    },

    expire(now: number) {
      return enqueue<number>({ t: 'exp', now })
    },

    async usage(mailbox: string) {
      assertOpen()
      const row = usageOf.get(mailbox) as { messages: number; bytes: number } | undefined
      return { messages: row?.messages ?? 0, bytes: row?.bytes ?? 0 }
    },

    close() {
      if (workerGone !== undefined) return workerGone
      closed = true
      flush()
      workerGone = (async () => {
        await whenIdle()
        if (broken === undefined) {
          await new Promise<void>((resolve) => {
            worker.once('exit', () => resolve())
            worker.ref()
            worker.postMessage({ type: 'close' })
          })
        } else {
          await worker.terminate().catch(() => 0)
        }
        db.close()
        removeTemp()
      })()
      return workerGone
    },
  }
}
