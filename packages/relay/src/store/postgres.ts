/**
 * The relay store on PostgreSQL (node-postgres), PROFILE §9, for several relay processes
 * sharing one database: each process opens its own store on the same schema, and together they
 * keep one set of mailboxes, quotas, remembered duplicates and nonces.
 *
 * - Schema: created or migrated at open, versioned (postgres-schema.ts).
 * - Writes: group-committed (postgres-queue.ts), a batch per transaction and one round trip
 *   (postgres-writes.ts, postgres-functions.ts); a write resolves once its COMMIT returned.
 *   Writers of every process take turns on one state row, so cursors increase in commit order
 *   and quotas hold across processes.
 * - Reads: one statement each on the pool (postgres-reads.ts).
 * - Live push: LISTEN/NOTIFY on a connection of its own (postgres-watch.ts).
 * - Jobs one process runs (webhook pushes): an advisory lock per job (postgres-lead.ts).
 */
import pg from 'pg'
import {
  newSubscriptionId,
  queuePublish,
  type RelayQuota,
  resolveQuota,
  uniqueTopics,
} from './common.js'
import { asStoreError } from './postgres-errors.js'
import { postgresLead } from './postgres-lead.js'
import { postgresCommitQueue } from './postgres-queue.js'
import { postgresReads } from './postgres-reads.js'
import {
  DEFAULT_POSTGRES_SCHEMA,
  migratePostgresSchema,
  postgresChannel,
  quoteSchema,
} from './postgres-schema.js'
import { startPostgresWatch } from './postgres-watch.js'
import { type PostgresWriteOp, postgresBatchRunner, publishOp } from './postgres-writes.js'
import type { PublishInput, RelayStore, StorePublishResult, Subscription } from './types.js'

export { POSTGRES_LEAD_APPLICATION } from './postgres-lead.js'
export { DEFAULT_POSTGRES_SCHEMA, POSTGRES_SCHEMA_VERSION } from './postgres-schema.js'
export { POSTGRES_LISTEN_APPLICATION } from './postgres-watch.js'

export interface PostgresRelayStoreOptions {
  /** postgres://… URL (ignored when `pool` is given). */
  connectionString?: string
  /** A pool the caller owns (not ended by close()). */
  pool?: pg.Pool
  /** Schema holding the tables (created if missing). @default 'agentmsg_relay' */
  schema?: string
  /** Quotas (default: 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB). */
  quota?: RelayQuota
  groupCommit?: {
    /** Writes per transaction at most. @default 256 */
    maxBatch?: number
  }
  /** Pool size when the store makes the pool. @default 10 */
  maxConnections?: number
  /** Trouble outside any call: the LISTEN connection, idle pool connections, listeners. */
  onError?: (error: unknown) => void
}

/** A PostgreSQL relay store: the whole RelayStore, shared by several relay processes. */
export interface PostgresRelayStore extends RelayStore {
  settled(): Promise<void>
  watch(listener: (mailbox: string | undefined) => void): () => void
  rememberNonce(
    keyId: string,
    nonce: string,
    expiresAt: number,
    now: number,
  ): Promise<'fresh' | 'replay'>
  lead(job: string, listener: (leading: boolean) => void): () => void
  checkWritable(): Promise<void>
  countMailboxes(): Promise<number>
  /** Messages stored (a topic message once, however many mailboxes reference it). */
  storedMessages(): Promise<number>
}

/** Application name of the store's pooled connections (visible in pg_stat_activity). */
export const POSTGRES_APPLICATION = 'agentmsg-relay'

/**
 * Settings of the connections of a pool the store makes. A write transaction holds the lock
 * every writer of every process waits for (postgres-functions.ts): if this process froze or its
 * network vanished mid-transaction, the server must end that session soon, not when the kernel's
 * TCP keepalive notices hours later. (Set with a query, not startup options, which connection
 * poolers may refuse. No effect of the TCP settings on a Unix socket.)
 */
const SESSION_SETTINGS =
  'SELECT set_config($1, $2, false), set_config($3, $4, false), ' +
  'set_config($5, $6, false), set_config($7, $8, false)'
const SESSION_VALUES = [
  'idle_in_transaction_session_timeout',
  '60000',
  'tcp_keepalives_idle',
  '10',
  'tcp_keepalives_interval',
  '5',
  'tcp_keepalives_count',
  '3',
]

/** The settings of a pool's connections, for the LISTEN connection. */
function clientConfigOf(pool: pg.Pool): pg.ClientConfig {
  // pg-pool keeps the password out of enumeration (so that logging the options hides it).
  return { ...pool.options, password: pool.options.password }
}

/**
 * Open a PostgreSQL relay store: connect, create or migrate the schema, start listening for
 * other processes' publishes. Rejects when the database cannot be reached or holds a newer
 * schema version.
 */
export async function openPostgresRelayStore(
  options: PostgresRelayStoreOptions,
): Promise<PostgresRelayStore> {
  const schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA
  const s = quoteSchema(schema)
  const quota = resolveQuota(options.quota)
  const maxBatch = Math.max(1, Math.floor(options.groupCommit?.maxBatch ?? 256))
  const onError =
    options.onError ?? ((error: unknown) => console.error('agentmsg relay store:', error))

  const owned = options.pool === undefined
  let pool: pg.Pool
  if (options.pool !== undefined) pool = options.pool
  else {
    if (options.connectionString === undefined) {
      throw new TypeError('openPostgresRelayStore needs a connectionString or a pool')
    }
    pool = new pg.Pool({
      connectionString: options.connectionString,
      max: Math.max(1, Math.floor(options.maxConnections ?? 10)),
      application_name: POSTGRES_APPLICATION,
      // An unreachable database fails a write (the relay answers 503) instead of hanging it.
      connectionTimeoutMillis: 10_000,
      // Awaited before the pool hands the connection out (pg-pool's hook; a 'connect' listener
      // would race the first query on it); a failure there fails that connect.
      onConnect: (client) => client.query(SESSION_SETTINGS, SESSION_VALUES),
    })
    // An idle connection that fails is dropped by the pool; unheard, it would crash the process.
    pool.on('error', onError)
  }

  // The server process ids of this store's pooled connections, whose publishes this process
  // already signalled to its own feeds (see `watch`).
  const ownBackends = new Set<number>()
  const processIdOf = (client: pg.PoolClient) =>
    (client as pg.PoolClient & { processID?: number }).processID
  pool.on('connect', (client) => {
    const id = processIdOf(client)
    if (id !== undefined) ownBackends.add(id)
  })
  pool.on('remove', (client) => {
    const id = processIdOf(client)
    if (id !== undefined) ownBackends.delete(id)
  })

  let watcher: Awaited<ReturnType<typeof startPostgresWatch>>
  try {
    const client = await pool.connect()
    let failed: Error | undefined
    try {
      await migratePostgresSchema(client, schema)
    } catch (error) {
      failed = error instanceof Error ? error : new Error(String(error))
      throw error
    } finally {
      client.release(failed)
    }
    watcher = await startPostgresWatch({
      config: clientConfigOf(pool),
      channel: postgresChannel(schema),
      onError,
      fromSelf: (processId) => ownBackends.has(processId),
    })
  } catch (error) {
    if (owned) await pool.end().catch(() => undefined)
    throw error
  }

  const reads = postgresReads(pool, s)
  const writes = postgresCommitQueue<PostgresWriteOp>(postgresBatchRunner(pool, s, quota), maxBatch)
  const rememberNonce =
    // One statement, outside the writers' turn: a pair is new, or held but expired at `now`
    // (then remembered again), or a replay (PROFILE §9 agent auth).
    `INSERT INTO ${s}.nonces AS n (key_id, nonce, expires_at) VALUES ($1, $2, $3::float8) ` +
    'ON CONFLICT (key_id, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at ' +
    'WHERE n.expires_at < $4::float8 RETURNING 1'

  /** A call's failure as the relay should see it: `unavailable` when the database is unreachable. */
  const guard = <T>(call: Promise<T>): Promise<T> =>
    call.catch((error: unknown) => {
      throw asStoreError(error, onError)
    })
  const enqueue = <T>(op: PostgresWriteOp, lazy?: boolean): Promise<T> =>
    guard(writes.enqueue<T>(op, lazy))

  async function open<T>(read: () => Promise<T>): Promise<T> {
    if (writes.closed) throw new Error('relay store is closed')
    return guard(read())
  }

  /** The elections this store takes part in, given up at close. */
  const elections = new Set<() => void>()
  let gone: Promise<void> | undefined

  return {
    async subscribe(input) {
      const topics = uniqueTopics(input.topics)
      const subscription: Subscription = {
        id: newSubscriptionId(),
        agent: input.agent,
        topics,
        created: input.now,
      }
      if (input.webhook !== undefined) subscription.webhook = { ...input.webhook }
      await enqueue({
        op: 'subscribe',
        id: subscription.id,
        agent: subscription.agent,
        topics,
        webhookUrl: subscription.webhook?.url ?? null,
        verified: subscription.webhook?.verified === true,
        created: subscription.created,
      })
      return subscription
    },

    unsubscribe(id, agent) {
      return enqueue<boolean>({ op: 'unsubscribe', id, agent })
    },

    setWebhookVerified(id, verified) {
      return enqueue<void>({ op: 'setWebhookVerified', id, verified })
    },

    subscriptions: (agent) => open(() => reads.subscriptions(agent)),
    mailboxState: (agent) => open(() => reads.mailboxState(agent)),
    topicSubscribers: (topic) => open(() => reads.topicSubscribers(topic)),

    publish: (input: PublishInput) =>
      queuePublish(input, writes.closed, (mailboxes) =>
        enqueue<StorePublishResult[]>(publishOp(input, mailboxes)),
      ),

    isDuplicate: (query) => open(() => reads.isDuplicate(query)),
    retrieve: (mailbox, opts) => open(() => reads.retrieve(mailbox, opts)),

    ack(mailbox, messageId, from, ackOptions) {
      const op: PostgresWriteOp = { op: 'ack', mailbox, messageId, from: from ?? null }
      return enqueue<number>(op, ackOptions?.lazy === true)
    },

    expire(now) {
      return enqueue<number>({ op: 'expire', now })
    },

    settled: () => writes.settled(),
    usage: (mailbox, from) => open(() => reads.usage(mailbox, from)),
    storedMessages: () => open(() => reads.storedMessages()),

    watch(listener) {
      if (writes.closed) return () => undefined
      return watcher.add(listener)
    },

    rememberNonce(keyId, nonce, expiresAt, now) {
      return open(async () => {
        const { rowCount } = await pool.query(rememberNonce, [keyId, nonce, expiresAt, now])
        return rowCount === 1 ? 'fresh' : 'replay'
      })
    },

    lead(job, listener) {
      if (writes.closed) return () => undefined
      const config = { config: clientConfigOf(pool), schema, onError }
      const stop = postgresLead(config, job, listener)
      const giveUp = () => {
        elections.delete(giveUp)
        stop()
      }
      elections.add(giveUp)
      return giveUp
    },

    checkWritable() {
      // Through the group commit: the writers' lock and a COMMIT, as a publish would.
      return enqueue<void>({ op: 'check' })
    },

    countMailboxes: () => open(() => reads.countMailboxes()),

    close() {
      if (gone !== undefined) return gone
      gone = (async () => {
        for (const giveUp of [...elections]) giveUp()
        await writes.close()
        await watcher.close()
        if (owned) await pool.end()
      })()
      return gone
    },
  }
}
