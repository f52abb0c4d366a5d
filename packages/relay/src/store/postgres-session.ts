/**
 * The PostgreSQL store's connections of their own, outside the pool, kept up across losses
 * (reconnected after a backoff): the LISTEN connection of live push (RelayStore.watch), and the
 * election of the process that runs a job (RelayStore.lead).
 */
import { Backoff } from '@agentmsg/core/http'
import type pg from 'pg'

/** Application names (visible in pg_stat_activity). */
export const POSTGRES_LISTEN_APPLICATION = 'agentmsg-relay-listen'
export const POSTGRES_LEAD_APPLICATION = 'agentmsg-relay-lead'

/** Ask the server to probe the connection, so it ends a dead peer's session within ~25 s. */
export const KEEPALIVE_SETTINGS =
  "SELECT set_config('tcp_keepalives_idle', '10', false), " +
  "set_config('tcp_keepalives_interval', '5', false), " +
  "set_config('tcp_keepalives_count', '3', false)"

type Drop = (error: unknown) => void

/**
 * A client kept connected: `start(client, drop)` runs on each new connection (a failure, or
 * `drop`, loses it); `down()` is told of each loss, then a new connection is tried after a
 * backoff. `ready` settles with the first connection; `retryFirst: false` makes its failure
 * final.
 */
function keepConnected(
  pgModule: typeof pg,
  config: pg.ClientConfig,
  onError: (error: unknown) => void,
  start: (client: pg.Client, drop: Drop) => Promise<void>,
  down: () => void,
  retryFirst: boolean,
): { ready: Promise<void>; stop(): Promise<void> } {
  const backoff = new Backoff({ baseMs: 100, capMs: 5000 })
  let client: pg.Client | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  let first = true
  let settle: { resolve(): void; reject(error: unknown): void } | undefined
  const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }))

  async function connect(): Promise<void> {
    timer = undefined
    if (stopped) return
    const next = new pgModule.Client(config)
    client = next
    const drop = (error?: unknown) => lost(next, error)
    next.on('error', drop)
    next.on('end', () => drop())
    try {
      await next.connect()
      await start(next, drop)
    } catch (error) {
      if (!first || retryFirst) return lost(next, error)
      stopped = true
      client = undefined
      next.end().catch(() => undefined)
      return settle?.reject(error)
    }
    if (next !== client) return
    first = false
    backoff.reset()
    settle?.resolve()
  }

  function lost(which: pg.Client, error?: unknown): void {
    if (which !== client || (first && !retryFirst)) return
    client = undefined
    which.end().catch(() => undefined)
    if (stopped) return
    if (error !== undefined) onError(error)
    down()
    timer = setTimeout(() => void connect(), backoff.next())
    // The relay's server keeps the process alive, not a reconnect.
    timer.unref()
  }

  void connect()
  return {
    ready,
    async stop() {
      stopped = true
      clearTimeout(timer)
      const last = client
      client = undefined
      await last?.end().catch(() => undefined)
    },
  }
}

/**
 * LISTEN on `channel`, where every publish transaction notifies each mailbox that got an entry
 * (delivered at COMMIT). After a reconnect every listener hears `undefined`: notifications sent
 * meanwhile are lost, so feeds read after their cursors. Notifications from this store's own
 * connections (`fromSelf`) are not passed on: the relay woke its feeds itself. Rejects when the
 * first connection fails.
 */
export async function startPostgresWatch(
  pgModule: typeof pg,
  config: pg.ClientConfig,
  channel: string,
  onError: (error: unknown) => void,
  fromSelf: (processId: number) => boolean,
) {
  const listeners = new Set<(mailbox: string | undefined) => void>()
  let reconnected = false
  const emit = (mailbox: string | undefined) => {
    for (const listener of [...listeners]) {
      try {
        listener(mailbox)
      } catch (error) {
        onError(error)
      }
    }
  }
  const session = keepConnected(
    pgModule,
    { ...config, application_name: POSTGRES_LISTEN_APPLICATION, keepAlive: true },
    onError,
    async (client) => {
      client.on('notification', (m) => {
        // '' stands for a mailbox name too long for a payload: any mailbox may have changed.
        if (m.channel === channel && !fromSelf(m.processId)) emit(m.payload || undefined)
      })
      await client.query(`LISTEN "${channel.replaceAll('"', '""')}"`)
      if (reconnected) emit(undefined)
      reconnected = true
    },
    () => undefined,
    false,
  )
  await session.ready
  return {
    /** Each registration is its own: a function added twice is called twice. */
    add(listener: (mailbox: string | undefined) => void): () => void {
      const wrapped = (mailbox: string | undefined) => listener(mailbox)
      listeners.add(wrapped)
      return () => listeners.delete(wrapped)
    },
    close: () => session.stop(),
  }
}

/** The advisory lock's name (hashed by `hashtextextended(name, 0)`) of a job on a schema. */
export function postgresLeadKey(schema: string, job: string): string {
  return `agentmsg-relay-lead:${schema}:${job}`
}

/**
 * Take part in the election for `job`: the leader holds a session-level advisory lock; every
 * other process waits for it on a connection of its own, so it takes over as soon as the
 * leader's session ends. A leader pings its connection every `pingMs`, so one that silently died
 * is noticed. Returns the function that gives the job up.
 */
export function postgresLead(
  pgModule: typeof pg,
  options: { config: pg.ClientConfig; schema: string; onError: (error: unknown) => void },
  job: string,
  listener: (leading: boolean) => void,
  pingMs = 5000,
): () => void {
  let leading = false
  let pinger: ReturnType<typeof setInterval> | undefined
  const tell = (value: boolean) => {
    if (leading === value) return
    leading = value
    try {
      listener(value)
    } catch (error) {
      options.onError(error)
    }
  }
  const key = postgresLeadKey(options.schema, job)
  const config = {
    ...options.config,
    application_name: POSTGRES_LEAD_APPLICATION,
    keepAlive: true,
    keepAliveInitialDelayMillis: 5000,
  }
  const session = keepConnected(
    pgModule,
    config,
    options.onError,
    async (client, drop) => {
      await client.query(KEEPALIVE_SETTINGS)
      // Waits while another process leads.
      await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key])
      pinger = setInterval(() => {
        // No answer within pingMs counts as lost (a dead peer sends no error).
        const late = setTimeout(() => drop(new Error('leader connection ping timed out')), pingMs)
        late.unref()
        client.query('SELECT 1').then(() => clearTimeout(late), drop)
      }, pingMs)
      pinger.unref()
      tell(true)
    },
    () => {
      clearInterval(pinger)
      tell(false)
    },
    true,
  )
  return () => {
    clearInterval(pinger)
    // Ending the session releases the lock (or stops waiting for it).
    void session.stop()
  }
}
