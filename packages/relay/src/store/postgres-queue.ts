/**
 * The PostgreSQL relay store's group commit queue: every write is queued and run in batches,
 * each batch ONE transaction, hence one COMMIT (one WAL flush), and a write's promise settles
 * only after the COMMIT covering it returned (PROFILE §9: 202 only once durably stored). The
 * same policy as the SQLite store's queue (sqlite-commit-queue.ts):
 *
 * - One batch is in flight at a time: whatever is queued while it commits goes out as the next
 *   batch as soon as it returned (at most `maxBatch` writes), so batches grow with the load.
 *   When idle, a batch goes on the next macrotask (`setImmediate`), or at once at `maxBatch`.
 * - A lazy write (a WebSocket ack frame: nobody waits for its answer) starts no batch of its
 *   own: it goes with the next other write, after `LAZY_DELAY_MS`, or when `settled()` is asked.
 *
 * Unlike the SQLite writer, a failed batch does not break the queue: the database may be back
 * for the next one (a lost connection is replaced by the pool).
 */

/** What the runner says of one write: its value, or its error. */
export type PostgresSettlement = { ok: unknown } | { error: unknown }

/** Runs one batch; resolves with one settlement per write, in order, or rejects for all. */
export type PostgresBatchRunner<Op> = (ops: Op[]) => Promise<PostgresSettlement[]>

export interface PostgresCommitQueue<Op> {
  /** Queue a write; settles once its COMMIT returned (or with its failure). */
  enqueue<T>(op: Op, lazy?: boolean): Promise<T>
  /** Resolves once every write enqueued before the call has settled (lazy ones go at once). */
  settled(): Promise<void>
  /** True once `close()` was called: writes reject. */
  readonly closed: boolean
  /** Stop taking writes; resolves once what was queued has been committed (or failed). */
  close(): Promise<void>
}

/** Longest a lazy write waits for company before it is committed alone. */
export const LAZY_DELAY_MS = 20

interface QueuedWrite<Op> {
  op: Op
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

export function postgresCommitQueue<Op>(
  run: PostgresBatchRunner<Op>,
  maxBatch: number,
): PostgresCommitQueue<Op> {
  let queue: QueuedWrite<Op>[] = []
  let inFlight = false
  let immediate: ReturnType<typeof setImmediate> | undefined
  let lazyTimer: ReturnType<typeof setTimeout> | undefined
  /** Queued writes that are not lazy: they start a batch. */
  let eager = 0
  let closed = false
  /** Writes enqueued so far, and settled so far (batches settle in order). */
  let enqueued = 0
  let settledCount = 0
  let waiters: Array<{ upTo: number; resolve: () => void }> = []

  function schedule(): void {
    if (inFlight || immediate !== undefined) return
    if (lazyTimer !== undefined) clearTimeout(lazyTimer)
    lazyTimer = undefined
    immediate = setImmediate(flush)
  }

  /** Only lazy writes wait: send them after LAZY_DELAY_MS unless another write comes first. */
  function scheduleLazy(): void {
    if (inFlight || immediate !== undefined || lazyTimer !== undefined) return
    lazyTimer = setTimeout(flush, LAZY_DELAY_MS)
  }

  function unschedule(): void {
    if (immediate !== undefined) clearImmediate(immediate)
    if (lazyTimer !== undefined) clearTimeout(lazyTimer)
    immediate = undefined
    lazyTimer = undefined
  }

  /** Run the queued writes (at most `maxBatch`) unless a batch is in flight. */
  function flush(): void {
    unschedule()
    if (inFlight || queue.length === 0) return
    const batch = queue.length > maxBatch ? queue.splice(0, maxBatch) : queue
    if (batch === queue) queue = []
    // Whatever stays queued counts as eager: it is the next batch in any case.
    eager = queue.length
    inFlight = true
    let settlements: Promise<PostgresSettlement[]>
    try {
      settlements = run(batch.map((write) => write.op))
    } catch (error) {
      settlements = Promise.reject(error)
    }
    settlements.then(
      (outcomes) => done(batch, outcomes),
      (error: unknown) => done(batch, undefined, error),
    )
  }

  function done(
    batch: QueuedWrite<Op>[],
    outcomes: PostgresSettlement[] | undefined,
    failure?: unknown,
  ): void {
    inFlight = false
    settledCount += batch.length
    // The next batch first: it commits while this one's promises settle. Lazy writes alone
    // wait for company (scheduleLazy).
    if (eager > 0 || (closed && queue.length > 0)) flush()
    else if (queue.length > 0) scheduleLazy()
    for (let i = 0; i < batch.length; i++) {
      const write = batch[i]!
      const outcome = outcomes?.[i]
      if (outcome === undefined) {
        write.reject(failure ?? new Error('relay store: no outcome for a write'))
      } else if ('ok' in outcome) write.resolve(outcome.ok)
      else write.reject(outcome.error)
    }
    const waiting: typeof waiters = []
    for (const waiter of waiters) {
      if (waiter.upTo <= settledCount) waiter.resolve()
      else waiting.push(waiter)
    }
    waiters = waiting
  }

  function settled(): Promise<void> {
    if (settledCount >= enqueued) return Promise.resolve()
    // Someone waits now: lazy writes go with the next batch, at once.
    if (eager < queue.length) {
      eager = queue.length
      if (!inFlight) flush()
    }
    const upTo = enqueued
    return new Promise<void>((resolve) => waiters.push({ upTo, resolve }))
  }

  return {
    enqueue<T>(op: Op, lazy = false): Promise<T> {
      if (closed) return Promise.reject(new Error('relay store is closed'))
      return new Promise<T>((resolve, reject) => {
        queue.push({ op, resolve: resolve as (value: unknown) => void, reject })
        enqueued++
        if (!lazy) eager++
        if (queue.length >= maxBatch) flush()
        else if (lazy) scheduleLazy()
        else schedule()
      })
    },

    settled,

    get closed() {
      return closed
    },

    close() {
      closed = true
      return settled()
    },
  }
}
