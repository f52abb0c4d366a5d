/**
 * `@agentmsg/relay/postgres`: the relay store on PostgreSQL, PROFILE §9, shared by several relay
 * processes (one set of mailboxes, quotas, remembered duplicates and nonces). Writes are
 * group-committed, a batch per transaction (postgres-writes.ts); reads one statement each;
 * live push and the webhook pusher's election in postgres-session.ts.
 */
import type pg from 'pg'
import { commitQueue, queuedStore, storeCall, type WriteOp } from './commit-queue.js'
import { bucketHasher, type RelayQuota, resolveQuota } from './common.js'
import { asStoreError, redactPostgresError } from './postgres-errors.js'
import { postgresReads, prepared } from './postgres-reads.js'
import { createPostgresSchema, postgresChannel, quoteSchema } from './postgres-schema.js'
import { KEEPALIVE_SETTINGS, postgresLead, startPostgresWatch } from './postgres-session.js'
import { postgresBatchRunner } from './postgres-writes.js'
import type { RelayStore } from './types.js'

export { POSTGRES_SCHEMA_VERSION } from './postgres-schema.js'

export interface PostgresRelayStoreOptions {
  /** postgres://… URL (ignored when `pool` is given). */
  connectionString?: string
  /** A pool the caller owns (not ended by close()). */
  pool?: pg.Pool
  /** Schema holding the tables (created if missing). @default 'agentmsg_relay' */
  schema?: string
  /** @default PROFILE §9: 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB */
  quota?: RelayQuota
  /** Writes per transaction at most. @default 256 */
  groupCommit?: { maxBatch?: number }
  /** Pool size when the store makes the pool. @default 10 */
  maxConnections?: number
  /** Trouble outside any call: the LISTEN connection, idle pool connections, listeners. */
  onError?: (error: unknown) => void
}

/** A PostgreSQL relay store: the whole RelayStore, shared by several relay processes. */
export interface PostgresRelayStore extends Required<RelayStore> {
  /** Messages stored (a topic message once). */
  storedMessages(): Promise<number>
}

/** Application name of the store's pooled connections (visible in pg_stat_activity). */
export const POSTGRES_APPLICATION = 'agentmsg-relay'

// A write transaction holds the locks of the mailboxes it writes: a frozen or cut-off process's
// session must end soon, not when TCP keepalive notices hours later. (A query: poolers may
// refuse startup options.)
const SESSION_SETTINGS = `${KEEPALIVE_SETTINGS}, set_config('idle_in_transaction_session_timeout', '60000', false)`

/** pg is an optional peer dependency: missing, one line naming the install command. */
async function loadPg(): Promise<typeof pg> {
  try {
    return (await import('pg')).default
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error
    throw new Error('the PostgreSQL relay store needs pg: npm install pg')
  }
}

/** Open a PostgreSQL relay store (schema created); rejects when unreachable or newer. */
export async function openPostgresRelayStore(
  options: PostgresRelayStoreOptions,
): Promise<PostgresRelayStore> {
  const pgModule = await loadPg()
  const schema = options.schema ?? 'agentmsg_relay'
  const s = quoteSchema(schema)
  const quota = resolveQuota(options.quota)
  const report =
    options.onError ?? ((error: unknown) => console.error('agentmsg relay store:', error))
  const onError = (error: unknown) => report(redactPostgresError(error))
  const owned = options.pool === undefined
  let pool: pg.Pool
  if (options.pool !== undefined) pool = options.pool
  else {
    if (options.connectionString === undefined) {
      throw new TypeError('openPostgresRelayStore needs a connectionString or a pool')
    }
    pool = new pgModule.Pool({
      connectionString: options.connectionString,
      max: Math.max(1, Math.floor(options.maxConnections ?? 10)),
      application_name: POSTGRES_APPLICATION,
      // An unreachable database fails a write (503) instead of hanging it.
      connectionTimeoutMillis: 10_000,
      // Awaited before the pool hands the connection out (a 'connect' listener would race).
      onConnect: (client) => client.query(SESSION_SETTINGS),
    })
    // An idle connection that fails is dropped; unheard, it would crash the process.
    pool.on('error', onError)
  }
  // The server process ids of this store's pooled connections, whose publishes this process
  // already signalled to its own feeds (see `watch`).
  const own = new Set<number>()
  const idOf = (client: pg.PoolClient) => (client as { processID?: number }).processID ?? 0
  pool.on('connect', (client) => own.add(idOf(client)))
  pool.on('remove', (client) => own.delete(idOf(client)))
  // pg-pool keeps the password out of enumeration.
  const config: pg.ClientConfig = { ...pool.options, password: pool.options.password }
  let watcher: Awaited<ReturnType<typeof startPostgresWatch>>
  let bucketKey: Buffer
  try {
    const client = await pool.connect()
    // A connection whose statement failed is dropped, not pooled again.
    try {
      bucketKey = await createPostgresSchema(client, schema)
    } catch (error) {
      client.release(true)
      throw error
    }
    client.release()
    const channel = postgresChannel(schema)
    watcher = await startPostgresWatch(pgModule, config, channel, onError, (id) => own.has(id))
  } catch (error) {
    if (owned) await pool.end().catch(() => undefined)
    throw error
  }
  const reads = postgresReads(pool, s)
  const maxBatch = Math.max(1, Math.floor(options.groupCommit?.maxBatch ?? 256))
  const queue = commitQueue<WriteOp>(postgresBatchRunner(pgModule, pool, s, quota), maxBatch)
  // One statement, outside the writers' turn: a pair is new, held but expired at `now`
  // (remembered again), or a replay (PROFILE §9 agent auth).
  const rememberNonce = prepared(
    `INSERT INTO ${s}.nonces AS n (key_id, nonce, expires_at) VALUES ($1, $2, $3::float8) ` +
      'ON CONFLICT (key_id, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at ' +
      'WHERE n.expires_at < $4::float8 RETURNING 1',
  )
  // The database unreachable: `unavailable` (503 with Retry-After), the operator told.
  const guard = <T>(call: Promise<T>) =>
    call.catch((error: unknown) => {
      throw asStoreError(error, onError)
    })
  const elections = new Set<() => void>()
  const close = async () => {
    for (const giveUp of [...elections]) giveUp()
    await queue.close()
    await watcher.close()
    if (owned) await pool.end()
  }
  const store = queuedStore(queue, reads, bucketHasher(bucketKey), close, guard)
  const call = storeCall(queue, guard)
  return {
    ...store,
    storedMessages: call(reads.storedMessages),
    watch: (listener) => (queue.closed ? () => undefined : watcher.add(listener)),
    rememberNonce: call(async (keyId: string, nonce: string, expiresAt: number, now: number) => {
      const { rowCount } = await pool.query({
        ...rememberNonce,
        values: [keyId, nonce, expiresAt, now],
      })
      return rowCount === 1 ? ('fresh' as const) : ('replay' as const)
    }),
    lead(job, listener) {
      if (queue.closed) return () => undefined
      const stop = postgresLead(pgModule, { config, schema, onError }, job, listener)
      const giveUp = () => {
        elections.delete(giveUp)
        stop()
      }
      elections.add(giveUp)
      return giveUp
    },
  }
}
