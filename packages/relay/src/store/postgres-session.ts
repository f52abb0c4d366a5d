/** The PostgreSQL store's own connections, reconnected after losses: LISTEN and elections. */
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
 * A client kept connected: `start` runs on each connection (failing, or `drop`, loses it);
 * `down()` hears each loss, then a reconnect after a backoff. `retryFirst: false`: a failed
 * first connection is final (`ready` rejects).
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
 * LISTEN on `channel` (each publish notifies its new entries' mailboxes at COMMIT). After a
 * reconnect listeners hear `undefined` (notifications were lost); this store's own (`fromSelf`)
 * are not passed on: the relay woke its feeds itself.
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
export const postgresLeadKey = (schema: string, job: string) =>
  `agentmsg-relay-lead:${schema}:${job}`

/**
 * Take part in the election for `job`: the leader holds a session advisory lock the others wait
 * for, so one takes over when its session ends; it pings every `pingMs` to notice a silent death.
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
