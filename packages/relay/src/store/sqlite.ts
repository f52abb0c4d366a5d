/**
 * The embedded relay store on SQLite (better-sqlite3), PROFILE §9.
 *
 * Durability: `journal_mode = WAL`, `synchronous = FULL` — every commit syncs the WAL before it
 * returns, and better-sqlite3 is synchronous, so a write whose promise resolved is on disk.
 *
 * Group commit: every write (publish, ack, subscribe, unsubscribe, setWebhookVerified, expire)
 * is queued and run in a batch that shares ONE transaction, hence one fsync. A batch is flushed
 * when `maxBatch` writes are queued, else on the next macrotask (`setImmediate`), or after
 * `maxDelayMs` when that is set. Every promise of a batch settles after its COMMIT returned.
 *
 * One write's failure does not fail the others. An expected refusal (a full mailbox) is decided
 * before that write changes anything, so the batch goes on. An unexpected error (I/O, a bug)
 * rolls the batch back, and its writes are then run again one transaction each, so only the
 * failing one fails. (SAVEPOINTs per write would do the same, but cost ~20 µs each here —
 * more than the write itself.)
 *
 * Reads (retrieve, usage, mailboxState, subscriptions, topicSubscribers) are not queued: they see
 * committed data only. A write whose promise has not resolved yet is not visible — which is
 * what a client may expect, since the relay has not answered for it either.
 */
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

interface QueuedWrite {
  /** Runs inside the batch transaction; returns a {@link Refusal} only before writing anything. */
  run: () => unknown
  publish: boolean
  resolve: (value: never) => void
  reject: (error: unknown) => void
}

/** A write's expected failure (a full mailbox), decided before it wrote anything. */
class Refusal {
  constructor(readonly error: unknown) {}
}

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

/** Open (creating or migrating) a SQLite relay store. */
export function sqliteRelayStore(options: SqliteRelayStoreOptions): RelayStore {
  const quota = resolveQuota(options.quota)
  const maxBatch = Math.max(1, Math.floor(options.groupCommit?.maxBatch ?? 1024))
  const maxDelayMs = Math.max(0, options.groupCommit?.maxDelayMs ?? 0)
  const onCommit = options.onCommit

  const db = new Database(options.path)
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`)
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.pragma('foreign_keys = ON')
    migrate(db)
  } catch (error) {
    db.close()
    throw error
  }

  // Transaction control.
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')

  // Publish.
  const findEntry = db
    .prepare('SELECT cursor FROM entries WHERE mailbox = ? AND message_id = ? AND from_agent = ?')
    .pluck()
  // Count one more entry against a mailbox if it has room (a check and a write in one).
  const reserve = db.prepare(
    'UPDATE mailboxes SET messages = messages + 1, bytes = bytes + ? ' +
      'WHERE agent = ? AND messages + 1 <= ? AND bytes + ? <= ?',
  )
  const addUsage = db.prepare(
    "INSERT INTO mailboxes (agent, state, messages, bytes) VALUES (?, 'none', 1, ?) " +
      'ON CONFLICT (agent) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes',
  )
  const insertMessage = db.prepare(
    'INSERT INTO messages (from_agent, message_id, json, bytes, received_at, expires_at) ' +
      'VALUES (?, ?, ?, ?, ?, ?)',
  )
  const insertEntry = db.prepare(
    'INSERT INTO entries (mailbox, message_ref, from_agent, message_id, bytes) VALUES (?, ?, ?, ?, ?)',
  )

  // Retrieve, usage.
  const page = db.prepare(
    'SELECT e.cursor, e.from_agent, e.message_id, m.json, e.bytes FROM entries e ' +
      'JOIN messages m ON m.id = e.message_ref ' +
      'WHERE e.mailbox = ? AND e.cursor > ? AND m.expires_at > ? ORDER BY e.cursor LIMIT ?',
  )
  const usageOf = db.prepare('SELECT messages, bytes FROM mailboxes WHERE agent = ?')

  // Ack, expiry.
  const subtractUsage = db.prepare(
    'UPDATE mailboxes SET messages = messages - ?, bytes = bytes - ? WHERE agent = ?',
  )
  const deleteEntriesById = db.prepare(
    'DELETE FROM entries WHERE mailbox = ? AND message_id = ? RETURNING message_ref, bytes',
  )
  const deleteEntriesByIdFrom = db.prepare(
    'DELETE FROM entries WHERE mailbox = ? AND message_id = ? AND from_agent = ? ' +
      'RETURNING message_ref, bytes',
  )
  const deleteIfOrphan = db.prepare(
    'DELETE FROM messages WHERE id = ? AND NOT EXISTS (SELECT 1 FROM entries WHERE message_ref = ?)',
  )
  const expiredByMailbox = db.prepare(
    'SELECT e.mailbox, COUNT(*) AS n, SUM(e.bytes) AS b FROM messages m ' +
      'JOIN entries e ON e.message_ref = m.id WHERE m.expires_at <= ? GROUP BY e.mailbox',
  )
  const expiredInMailbox = db.prepare(
    'SELECT COUNT(*) AS n, SUM(e.bytes) AS b FROM entries e JOIN messages m ON m.id = e.message_ref ' +
      'WHERE e.mailbox = ? AND m.expires_at <= ?',
  )
  const deleteExpiredEntries = db.prepare(
    'DELETE FROM entries WHERE message_ref IN (SELECT id FROM messages WHERE expires_at <= ?)',
  )
  const deleteExpiredInMailbox = db.prepare(
    'DELETE FROM entries WHERE mailbox = ? ' +
      'AND message_ref IN (SELECT id FROM messages WHERE expires_at <= ?)',
  )
  // Once the expired entries are gone, no entry references an expired message.
  const deleteExpiredMessages = db.prepare('DELETE FROM messages WHERE expires_at <= ?')

  // Subscriptions.
  const insertSubscription = db.prepare(
    'INSERT INTO subscriptions (id, agent, topics, webhook_url, webhook_verified, created) ' +
      'VALUES (?, ?, ?, ?, ?, ?)',
  )
  const insertTopic = db.prepare(
    'INSERT OR IGNORE INTO subscription_topics (topic, subscription_id) VALUES (?, ?)',
  )
  const openMailbox = db.prepare(
    "INSERT INTO mailboxes (agent, state) VALUES (?, 'open') ON CONFLICT (agent) DO UPDATE SET state = 'open'",
  )
  const deleteSubscription = db.prepare('DELETE FROM subscriptions WHERE id = ? AND agent = ?')
  const deleteTopics = db.prepare('DELETE FROM subscription_topics WHERE subscription_id = ?')
  const hasSubscription = db.prepare('SELECT 1 FROM subscriptions WHERE agent = ? LIMIT 1').pluck()
  const closeMailbox = db.prepare("UPDATE mailboxes SET state = 'closed' WHERE agent = ?")
  const setVerified = db.prepare(
    'UPDATE subscriptions SET webhook_verified = ? WHERE id = ? AND webhook_url IS NOT NULL',
  )
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

  // ---- group commit ----------------------------------------------------------------------

  let queue: QueuedWrite[] = []
  let timer: ReturnType<typeof setTimeout> | undefined
  let immediate: ReturnType<typeof setImmediate> | undefined
  let closed = false

  function schedule(): void {
    if (timer !== undefined || immediate !== undefined) return
    if (maxDelayMs > 0) timer = setTimeout(flush, maxDelayMs)
    else immediate = setImmediate(flush)
  }

  function unschedule(): void {
    if (timer !== undefined) clearTimeout(timer)
    if (immediate !== undefined) clearImmediate(immediate)
    timer = undefined
    immediate = undefined
  }

  function enqueue<T>(run: () => T, publish = false): Promise<T> {
    if (closed) return Promise.reject(new Error('relay store is closed'))
    return new Promise<T>((resolve, reject) => {
      queue.push({ run, publish, resolve: resolve as (value: never) => void, reject })
      if (queue.length >= maxBatch) flush()
      else schedule()
    })
  }

  /** Run every queued write in one transaction; settle their promises after COMMIT. */
  function flush(): void {
    unschedule()
    while (queue.length > 0) {
      const batch = queue.length > maxBatch ? queue.splice(0, maxBatch) : queue
      if (batch === queue) queue = []
      runBatch(batch)
    }
  }

  function runBatch(batch: QueuedWrite[]): void {
    const outcomes: unknown[] = new Array(batch.length)
    const start = performance.now()
    try {
      begin.run()
      try {
        for (let i = 0; i < batch.length; i++) outcomes[i] = batch[i]!.run()
      } catch {
        // One write failed unexpectedly: undo the batch, then give each write its own
        // transaction so that only the failing one fails.
        rollbackQuietly()
        runAlone(batch)
        return
      }
      commit.run()
    } catch (error) {
      // BEGIN or COMMIT failed: nothing of this batch is stored.
      rollbackQuietly()
      for (const write of batch) write.reject(error)
      return
    }
    committed(batch, start)
    for (let i = 0; i < batch.length; i++) settle(batch[i]!, outcomes[i])
  }

  function rollbackQuietly(): void {
    try {
      if (db.inTransaction) rollback.run()
    } catch {
      // The engine already rolled back, or the connection is unusable: the writes fail anyway.
    }
  }

  function runAlone(batch: QueuedWrite[]): void {
    for (const write of batch) {
      const start = performance.now()
      let outcome: unknown
      try {
        begin.run()
        outcome = write.run()
        commit.run()
      } catch (error) {
        rollbackQuietly()
        write.reject(error)
        continue
      }
      committed([write], start)
      settle(write, outcome)
    }
  }

  function settle(write: QueuedWrite, outcome: unknown): void {
    if (outcome instanceof Refusal) write.reject(outcome.error)
    else write.resolve(outcome as never)
  }

  function committed(batch: QueuedWrite[], start: number): void {
    if (onCommit === undefined) return
    let publishes = 0
    for (const write of batch) if (write.publish) publishes++
    try {
      onCommit({ size: batch.length, publishes, ms: performance.now() - start })
    } catch {
      // A metrics hook must not break the store.
    }
  }

  // ---- write operations (run inside the batch transaction) -------------------------------

  /** Remove a mailbox's expired entries (to make room); their messages go at the next expire(). */
  function purgeExpired(mailbox: string, now: number): boolean {
    const row = expiredInMailbox.get(mailbox, now) as { n: number; b: number | null }
    if (row.n === 0) return false
    subtractUsage.run(row.n, row.b ?? 0, mailbox)
    deleteExpiredInMailbox.run(mailbox, now)
    return true
  }

  /** Whether one more entry of `bytes` fits in the mailbox (dropping expired entries if not). */
  function hasRoom(mailbox: string, bytes: number, now: number): boolean {
    const fits = () => {
      const row = usageOf.get(mailbox) as { messages: number; bytes: number } | undefined
      return (row?.messages ?? 0) + 1 <= quota.messages && (row?.bytes ?? 0) + bytes <= quota.bytes
    }
    return fits() || (purgeExpired(mailbox, now) && fits())
  }

  /** A publish to one mailbox (a direct message): the quota check and count in one UPDATE. */
  function publishOne(input: PublishInput, mailbox: string): PublishResult[] | Refusal {
    const existing = findEntry.get(mailbox, input.messageId, input.from) as number | undefined
    if (existing !== undefined) return [{ mailbox, cursor: String(existing), duplicate: true }]
    const { bytes } = input
    if (reserve.run(bytes, mailbox, quota.messages, bytes, quota.bytes).changes === 0) {
      // Full, or no row yet: nothing written so far (but expired entries may go).
      if (!hasRoom(mailbox, bytes, input.receivedAt)) {
        return new Refusal(new MailboxFullError(mailbox))
      }
      addUsage.run(mailbox, bytes)
    }
    const ref = insertMessage.run(
      input.from,
      input.messageId,
      input.json,
      bytes,
      input.receivedAt,
      input.expiresAt,
    ).lastInsertRowid
    const cursor = insertEntry.run(mailbox, ref, input.from, input.messageId, bytes).lastInsertRowid
    return [{ mailbox, cursor: String(cursor), duplicate: false }]
  }

  /** A publish to several mailboxes (a topic message): check them all, then write. */
  function publishMany(input: PublishInput, mailboxes: string[]): PublishResult[] | Refusal {
    const results: PublishResult[] = []
    const fresh: PublishResult[] = []
    for (const mailbox of mailboxes) {
      const existing = findEntry.get(mailbox, input.messageId, input.from) as number | undefined
      if (existing !== undefined) {
        results.push({ mailbox, cursor: String(existing), duplicate: true })
        continue
      }
      // Refused before any write of this publish: nothing is stored for any mailbox.
      if (!hasRoom(mailbox, input.bytes, input.receivedAt)) {
        return new Refusal(new MailboxFullError(mailbox))
      }
      const result = { mailbox, cursor: '', duplicate: false }
      fresh.push(result)
      results.push(result)
    }
    if (fresh.length === 0) return results
    const ref = insertMessage.run(
      input.from,
      input.messageId,
      input.json,
      input.bytes,
      input.receivedAt,
      input.expiresAt,
    ).lastInsertRowid
    for (const result of fresh) {
      addUsage.run(result.mailbox, input.bytes)
      const cursor = insertEntry.run(
        result.mailbox,
        ref,
        input.from,
        input.messageId,
        input.bytes,
      ).lastInsertRowid
      result.cursor = String(cursor)
    }
    return results
  }

  function ackWrite(mailbox: string, messageId: string, from: string | undefined): number {
    const rows = (
      from === undefined
        ? deleteEntriesById.all(mailbox, messageId)
        : deleteEntriesByIdFrom.all(mailbox, messageId, from)
    ) as { message_ref: number; bytes: number }[]
    if (rows.length === 0) return 0
    let bytes = 0
    for (const row of rows) bytes += row.bytes
    subtractUsage.run(rows.length, bytes, mailbox)
    for (const ref of new Set(rows.map((row) => row.message_ref))) deleteIfOrphan.run(ref, ref)
    return rows.length
  }

  function expireWrite(now: number): number {
    const perMailbox = expiredByMailbox.all(now) as { mailbox: string; n: number; b: number }[]
    for (const row of perMailbox) subtractUsage.run(row.n, row.b, row.mailbox)
    const removed = deleteExpiredEntries.run(now).changes
    deleteExpiredMessages.run(now)
    return removed
  }

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
    subscribe(input: { agent: string; topics: string[]; webhook?: WebhookTarget; now: number }) {
      const topics = uniqueTopics(input.topics)
      const webhook = input.webhook === undefined ? undefined : { ...input.webhook }
      const subscription: Subscription = {
        id: newSubscriptionId(),
        agent: input.agent,
        topics,
        created: input.now,
      }
      if (webhook !== undefined) subscription.webhook = webhook
      return enqueue(() => {
        insertSubscription.run(
          subscription.id,
          subscription.agent,
          JSON.stringify(topics),
          webhook?.url ?? null,
          webhook?.verified === true ? 1 : 0,
          subscription.created,
        )
        for (const topic of topics) insertTopic.run(topic, subscription.id)
        openMailbox.run(subscription.agent)
        return subscription
      })
    },

    unsubscribe(id: string, agent: string) {
      return enqueue(() => {
        if (deleteSubscription.run(id, agent).changes === 0) return false
        deleteTopics.run(id)
        if (hasSubscription.get(agent) === undefined) closeMailbox.run(agent)
        return true
      })
    },

    setWebhookVerified(id: string, verified: boolean) {
      return enqueue(() => {
        setVerified.run(verified ? 1 : 0, id)
      })
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
      const [only] = mailboxes
      const run =
        mailboxes.length === 1 && only !== undefined
          ? () => publishOne(input, only)
          : () => publishMany(input, mailboxes)
      return enqueue(run, true) as Promise<PublishResult[]>
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

    ack(mailbox: string, messageId: string, from?: string) {
      return enqueue(() => ackWrite(mailbox, messageId, from))
    },

    expire(now: number) {
      return enqueue(() => expireWrite(now))
    },

    async usage(mailbox: string) {
      assertOpen()
      const row = usageOf.get(mailbox) as { messages: number; bytes: number } | undefined
      return { messages: row?.messages ?? 0, bytes: row?.bytes ?? 0 }
    },

    async close() {
      if (closed) return
      flush()
      closed = true
      db.close()
    },
  }
}
