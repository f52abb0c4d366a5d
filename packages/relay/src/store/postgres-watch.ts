/**
 * Live push across relay processes (RelayStore.watch): every publish transaction notifies the
 * store's channel with each mailbox that got a new entry (`pg_notify`, delivered at COMMIT, see
 * postgres-functions.ts), and each store LISTENs on a connection of its own — not one of the
 * pool's, which a LISTEN would tie up and a pool may close when idle.
 *
 * When that connection drops, notifications sent meanwhile are lost: the watcher reconnects
 * with a bounded backoff and, once it LISTENs again, tells every listener `undefined` ("any
 * mailbox may have changed"), so feeds read after their cursors and miss nothing.
 */
import pg from 'pg'

export type PostgresWatchListener = (mailbox: string | undefined) => void

export interface PostgresWatchOptions {
  /** How to connect (the store's pool settings). */
  config: pg.ClientConfig
  channel: string
  /** Connection trouble, and listeners that threw. */
  onError: (error: unknown) => void
  /**
   * True for the server process id of one of this store's own connections: its notifications
   * are not passed on (the relay wakes its own feeds after its own publishes; hearing them again
   * would cost every feed here a second, empty read per message).
   */
  fromSelf?: (processId: number) => boolean
  /** First reconnect delay, doubled on each failure up to `maxDelayMs`. @default 100 */
  minDelayMs?: number
  /** @default 5000 */
  maxDelayMs?: number
}

export interface PostgresWatch {
  /** Register a listener; returns the function that removes it. */
  add(listener: PostgresWatchListener): () => void
  /** Stop reconnecting and close the connection. */
  close(): Promise<void>
}

/** Application name of the LISTEN connections (visible in pg_stat_activity). */
export const POSTGRES_LISTEN_APPLICATION = 'agentmsg-relay-listen'

/** Connect and LISTEN; rejects when the first connection fails. */
export async function startPostgresWatch(options: PostgresWatchOptions): Promise<PostgresWatch> {
  const { channel, onError } = options
  const minDelayMs = options.minDelayMs ?? 100
  const maxDelayMs = options.maxDelayMs ?? 5000
  const config: pg.ClientConfig = {
    ...options.config,
    application_name: POSTGRES_LISTEN_APPLICATION,
    keepAlive: true,
  }
  const listeners = new Set<PostgresWatchListener>()
  let client: pg.Client | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let failures = 0
  let closed = false

  function emit(mailbox: string | undefined): void {
    for (const listener of [...listeners]) {
      try {
        listener(mailbox)
      } catch (error) {
        onError(error)
      }
    }
  }

  async function connect(): Promise<pg.Client> {
    const next = new pg.Client(config)
    next.on('notification', (message) => {
      if (message.channel !== channel || options.fromSelf?.(message.processId) === true) return
      // '' stands for a mailbox name too long for a payload: any mailbox may have changed.
      emit(message.payload || undefined)
    })
    next.on('error', (error) => lost(next, error))
    next.on('end', () => lost(next))
    try {
      await next.connect()
      await next.query(`LISTEN "${channel.replaceAll('"', '""')}"`)
    } catch (error) {
      next.end().catch(() => undefined)
      throw error
    }
    return next
  }

  function lost(which: pg.Client, error?: unknown): void {
    if (which !== client || closed) return
    client = undefined
    if (error !== undefined) onError(error)
    which.end().catch(() => undefined)
    reconnect()
  }

  function reconnect(): void {
    const delay = Math.min(maxDelayMs, minDelayMs * 2 ** Math.min(failures, 16))
    timer = setTimeout(async () => {
      timer = undefined
      try {
        const next = await connect()
        if (closed) {
          await next.end().catch(() => undefined)
          return
        }
        client = next
        failures = 0
        // Whatever was notified while no connection listened is lost: wake everyone.
        emit(undefined)
      } catch (error) {
        if (closed) return
        failures++
        onError(error)
        reconnect()
      }
    }, delay)
    // The relay's server keeps the process alive, not a reconnect.
    timer.unref()
  }

  client = await connect()

  return {
    add(listener) {
      // Each registration is its own: a function registered twice is called twice, and each
      // returned stop removes one.
      const wrapped: PostgresWatchListener = (mailbox) => listener(mailbox)
      listeners.add(wrapped)
      return () => {
        listeners.delete(wrapped)
      }
    },

    async close() {
      closed = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      const last = client
      client = undefined
      if (last !== undefined) await last.end().catch(() => undefined)
    },
  }
}
