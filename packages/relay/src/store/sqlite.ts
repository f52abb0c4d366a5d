/**
 * The embedded relay store on SQLite (better-sqlite3), PROFILE §9.
 *
 * Durability: `journal_mode = WAL`, `synchronous = FULL` (sqlite-schema.ts) — every COMMIT
 * syncs the WAL before it returns, and a write's promise resolves only after the COMMIT
 * covering it returned (the group commit, sqlite-commit-queue.ts).
 *
 * Writes run off the main thread, in a worker that owns the write connection
 * (sqlite-writer.ts). Reads (retrieve, isDuplicate, usage, mailboxState, subscriptions,
 * topicSubscribers) run on the main thread's own connection (sqlite-reads.ts), which creates or
 * migrates the schema at open and then only reads. `':memory:'` cannot be shared by two connections, so it
 * stands for a private temporary file, deleted at close.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import {
  newSubscriptionId,
  queuePublish,
  type RelayQuota,
  resolveQuota,
  uniqueTopics,
} from './common.js'
import { sqliteCommitQueue } from './sqlite-commit-queue.js'
import type { SqliteCommitInfo } from './sqlite-protocol.js'
import { sqliteReads } from './sqlite-reads.js'
import { configureSqliteConnection, migrateSqliteSchema } from './sqlite-schema.js'
import { startSqliteWriter } from './sqlite-writer-start.js'
import type { PublishInput, RelayStore, Subscription } from './types.js'

export type { SqliteCommitInfo } from './sqlite-protocol.js'
export { SQLITE_SCHEMA_VERSION } from './sqlite-schema.js'

export interface SqliteRelayStoreOptions {
  /** Database file (in the relay's data directory); `':memory:'` for tests (not durable). */
  path: string
  /** Quotas (default: 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB). */
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

/** The main thread's connection: creates or migrates the schema, then only reads. */
function openReader(path: string, busyTimeoutMs: number): Database.Database {
  const db = new Database(path)
  try {
    configureSqliteConnection(db, busyTimeoutMs)
    migrateSqliteSchema(db)
    db.pragma('query_only = ON')
  } catch (error) {
    db.close()
    throw error
  }
  return db
}

/** Open (creating or migrating) a SQLite relay store. */
export function sqliteRelayStore(options: SqliteRelayStoreOptions): RelayStore {
  const quota = resolveQuota(options.quota)
  const maxBatch = Math.max(1, Math.floor(options.groupCommit?.maxBatch ?? 1024))
  const maxDelayMs = Math.max(0, options.groupCommit?.maxDelayMs ?? 0)
  const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))

  let tempDir: string | undefined
  let path = options.path
  if (path === ':memory:' || path === '') {
    tempDir = mkdtempSync(join(tmpdir(), 'agentmsg-relay-'))
    path = join(tempDir, 'relay.db')
  }
  const removeTemp = () => {
    if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true })
  }

  let db: Database.Database
  let writes: ReturnType<typeof sqliteCommitQueue>
  try {
    db = openReader(path, busyTimeoutMs)
  } catch (error) {
    removeTemp()
    throw error
  }
  const reads = sqliteReads(db)
  try {
    writes = sqliteCommitQueue({
      worker: startSqliteWriter({ path, quota, busyTimeoutMs }),
      maxBatch,
      maxDelayMs,
      onCommit: options.onCommit,
    })
  } catch (error) {
    db.close()
    removeTemp()
    throw error
  }

  function assertOpen(): void {
    if (writes.closed) throw new Error('relay store is closed')
  }

  let gone: Promise<void> | undefined

  return {
    async subscribe(input) {
      const topics = uniqueTopics(input.topics)
      const webhook = input.webhook === undefined ? undefined : { ...input.webhook }
      const subscription: Subscription = {
        id: newSubscriptionId(),
        agent: input.agent,
        topics,
        created: input.now,
      }
      if (webhook !== undefined) subscription.webhook = webhook
      await writes.enqueue({
        op: 'subscribe',
        id: subscription.id,
        agent: subscription.agent,
        topics,
        webhookUrl: webhook?.url ?? null,
        verified: webhook?.verified === true,
        created: subscription.created,
      })
      return subscription
    },

    unsubscribe(id, agent) {
      return writes.enqueue({ op: 'unsubscribe', id, agent })
    },

    setWebhookVerified(id, verified) {
      return writes.enqueue({ op: 'setWebhookVerified', id, verified })
    },

    async subscriptions(agent) {
      assertOpen()
      return reads.subscriptions(agent)
    },

    async mailboxState(agent) {
      assertOpen()
      return reads.mailboxState(agent)
    },

    async topicSubscribers(topic) {
      assertOpen()
      return reads.topicSubscribers(topic)
    },

    publish: (input: PublishInput) =>
      queuePublish(input, writes.closed, (mailboxes) =>
        writes.enqueue({ op: 'publish', input, mailboxes }),
      ),

    async isDuplicate(query) {
      assertOpen()
      return reads.isDuplicate(query)
    },

    async retrieve(mailbox, opts) {
      assertOpen()
      return reads.retrieve(mailbox, opts)
    },

    settled() {
      return writes.settled()
    },

    ack(mailbox, messageId, from, options) {
      return writes.enqueue({ op: 'ack', mailbox, messageId, from }, options?.lazy === true)
    },

    expire(now) {
      return writes.enqueue({ op: 'expire', now })
    },

    async usage(mailbox, from) {
      assertOpen()
      return reads.usage(mailbox, from)
    },

    checkWritable() {
      // A round trip through the writer: its write lock and connection, not just the thread.
      return writes.enqueue({ op: 'check' })
    },

    async countMailboxes() {
      assertOpen()
      return reads.countMailboxes()
    },

    close() {
      if (gone !== undefined) return gone
      gone = writes.close().then(() => {
        db.close()
        removeTemp()
      })
      return gone
    },
  }
}
