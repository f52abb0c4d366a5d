/**
 * Electing one relay process for a job (RelayStore.lead: webhook pushes, so that each message is
 * pushed once). The leader is whoever holds a session-level advisory lock named after the
 * store's schema and the job; every other process waits for that lock on a connection of its
 * own, so it takes over as soon as the leader's session ends (the leader gave the job up, its
 * process died, or its connection was lost).
 *
 * A leader that loses its connection loses the lock with it: it says `false` at once and then
 * waits for the lock again, with a bounded backoff between attempts. While leading it pings its
 * connection, so a connection that silently died is noticed within `pingMs` plus the ping's
 * timeout; the server is asked to probe the connection too (TCP keepalives), so that it ends a
 * dead leader's session, and releases the lock, within a few seconds rather than hours.
 */
import pg from 'pg'

/** Application name of the election connections (visible in pg_stat_activity). */
export const POSTGRES_LEAD_APPLICATION = 'agentmsg-relay-lead'

export interface PostgresLeadOptions {
  /** How to connect (the store's pool settings). */
  config: pg.ClientConfig
  schema: string
  /** Connection trouble, and listeners that threw. */
  onError: (error: unknown) => void
  /** First retry delay after a failure, doubled on each up to `maxDelayMs`. @default 100 */
  minDelayMs?: number
  /** @default 5000 */
  maxDelayMs?: number
  /** How often a leader checks its connection (ms). @default 5000 */
  pingMs?: number
}

/** The advisory lock's name (hashed by `hashtextextended(name, 0)`) of a job on a schema. */
export function postgresLeadKey(schema: string, job: string): string {
  return `agentmsg-relay-lead:${schema}:${job}`
}

/** Take part in the election for `job`; returns the function that gives it up. */
export function postgresLead(
  options: PostgresLeadOptions,
  job: string,
  listener: (leading: boolean) => void,
): () => void {
  const { onError } = options
  const minDelayMs = options.minDelayMs ?? 100
  const maxDelayMs = options.maxDelayMs ?? 5000
  const pingMs = options.pingMs ?? 5000
  const key = postgresLeadKey(options.schema, job)
  const config: pg.ClientConfig = {
    ...options.config,
    application_name: POSTGRES_LEAD_APPLICATION,
    keepAlive: true,
    keepAliveInitialDelayMillis: 5000,
  }
  let client: pg.Client | undefined
  let leading = false
  let stopped = false
  let failures = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  let pinger: ReturnType<typeof setInterval> | undefined

  function tell(value: boolean): void {
    if (leading === value) return
    leading = value
    try {
      listener(value)
    } catch (error) {
      onError(error)
    }
  }

  async function attempt(): Promise<void> {
    timer = undefined
    const next = new pg.Client(config)
    client = next
    next.on('error', (error) => lost(next, error))
    next.on('end', () => lost(next))
    try {
      await next.connect()
      // The server drops a dead peer's session (and its lock) within ~25 s (no effect on a
      // Unix socket).
      await next.query(
        'SELECT set_config($1, $2, false), set_config($3, $4, false), set_config($5, $6, false)',
        ['tcp_keepalives_idle', '10', 'tcp_keepalives_interval', '5', 'tcp_keepalives_count', '3'],
      )
      // Waits while another process leads.
      await next.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key])
    } catch (error) {
      lost(next, error)
      return
    }
    if (next !== client) return
    failures = 0
    pinger = setInterval(() => {
      // No answer within pingMs counts as a lost connection (a dead peer sends no error).
      const late = setTimeout(
        () => lost(next, new Error('leader connection ping timed out')),
        pingMs,
      )
      late.unref()
      next.query('SELECT 1').then(
        () => clearTimeout(late),
        (error: unknown) => {
          clearTimeout(late)
          lost(next, error)
        },
      )
    }, pingMs)
    pinger.unref()
    tell(true)
  }

  function lost(which: pg.Client, error?: unknown): void {
    if (which !== client) return
    client = undefined
    if (pinger !== undefined) clearInterval(pinger)
    pinger = undefined
    which.end().catch(() => undefined)
    if (stopped) return
    if (error !== undefined) onError(error)
    tell(false)
    const delay = Math.min(maxDelayMs, minDelayMs * 2 ** Math.min(failures, 16))
    failures++
    timer = setTimeout(() => void attempt(), delay)
    timer.unref()
  }

  void attempt()

  return () => {
    if (stopped) return
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    const last = client
    client = undefined
    if (pinger !== undefined) clearInterval(pinger)
    pinger = undefined
    // Ending the session releases the lock (or stops waiting for it).
    last?.end().catch(() => undefined)
  }
}
