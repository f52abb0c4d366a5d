/**
 * The SQLite relay store's group commit: every write (publish, ack, subscribe, unsubscribe,
 * setWebhookVerified, expire) is queued and sent to the writer worker in batches, each run in
 * ONE transaction, hence one fsync. A write's promise settles only after the COMMIT covering it
 * returned (PROFILE §9: 202 only once durably stored).
 *
 * One batch is in flight at a time: whatever is queued while the writer commits goes out as the
 * next batch as soon as that commit returned, so batches grow with the load (at most `maxBatch`
 * writes). When idle, a batch goes on the next macrotask (`setImmediate`), after `maxDelayMs`
 * when that is set, or at once when `maxBatch` writes are queued.
 *
 * A lazy write (a WebSocket ack frame: nobody waits for its answer) starts no batch of its own:
 * it goes with the next other write, or after `LAZY_DELAY_MS`, or at once when `settled()` is
 * asked. Issue 12: at a paced 500 publishes/s with WebSocket subscribers, every ack frame was a
 * transaction and an fsync of its own, half of the writer's commits.
 */
import type { Worker } from 'node:worker_threads'
import {
  errorFromWire,
  type FromSqliteWriter,
  type SqliteCommitInfo,
  type SqliteWriteKind,
  type SqliteWriteOp,
  type SqliteWriteOutcome,
  type SqliteWriteResults,
  type ToSqliteWriter,
} from './sqlite-protocol.js'
import { MailboxFullError, RelayStorageFullError } from './types.js'

export interface SqliteCommitQueueOptions {
  /** The writer (sqlite-writer.ts), just started; the queue owns it from now on. */
  worker: Worker
  /** Send a batch as soon as this many writes are queued. */
  maxBatch: number
  /** Wait at most this long for more writes (ms); 0 sends on the next macrotask. */
  maxDelayMs: number
  /** Called after each COMMIT. */
  onCommit?: ((info: SqliteCommitInfo) => void) | undefined
}

export interface SqliteCommitQueue {
  /** Queue a write; settles once its COMMIT returned (or with its failure). */
  enqueue<K extends SqliteWriteKind>(
    op: Extract<SqliteWriteOp, { op: K }>,
    lazy?: boolean,
  ): Promise<SqliteWriteResults[K]>
  /** Resolves once every write enqueued before the call has settled (lazy ones go at once). */
  settled(): Promise<void>
  /** True once `close()` was called: writes reject. */
  readonly closed: boolean
  /** Commit what is queued, then stop the writer. */
  close(): Promise<void>
}

/** Longest a lazy write waits for company before it is committed alone. */
export const LAZY_DELAY_MS = 20

interface QueuedWrite {
  op: SqliteWriteOp
  resolve: (value: SqliteWriteResults[SqliteWriteKind]) => void
  reject: (error: unknown) => void
}

export function sqliteCommitQueue(options: SqliteCommitQueueOptions): SqliteCommitQueue {
  const { worker, maxBatch, maxDelayMs, onCommit } = options
  const send = (message: ToSqliteWriter) => worker.postMessage(message)
  // Keep the process alive only while writes are pending (as a synchronous store would).
  worker.unref()

  let queue: QueuedWrite[] = []
  let inFlight: QueuedWrite[] | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let immediate: ReturnType<typeof setImmediate> | undefined
  let lazyTimer: ReturnType<typeof setTimeout> | undefined
  /** Queued writes that are not lazy: they start a batch. */
  let eager = 0
  let closed = false
  /** Set when the writer failed or exited: every write fails with it. */
  let broken: Error | undefined
  let idleWaiters: Array<() => void> = []
  /** Writes enqueued so far, and settled so far (batches settle in order). */
  let enqueued = 0
  let settledCount = 0
  let settledWaiters: Array<{ upTo: number; resolve: () => void }> = []

  function schedule(): void {
    if (inFlight !== undefined || timer !== undefined || immediate !== undefined) return
    if (lazyTimer !== undefined) clearTimeout(lazyTimer)
    lazyTimer = undefined
    if (maxDelayMs > 0) timer = setTimeout(flush, maxDelayMs)
    else immediate = setImmediate(flush)
  }

  /** Only lazy writes wait: send them after LAZY_DELAY_MS unless another write comes first. */
  function scheduleLazy(): void {
    if (inFlight !== undefined || timer !== undefined || immediate !== undefined) return
    if (lazyTimer !== undefined) return
    lazyTimer = setTimeout(flush, LAZY_DELAY_MS)
  }

  function unschedule(): void {
    if (timer !== undefined) clearTimeout(timer)
    if (immediate !== undefined) clearImmediate(immediate)
    if (lazyTimer !== undefined) clearTimeout(lazyTimer)
    timer = undefined
    immediate = undefined
    lazyTimer = undefined
  }

  function enqueue<K extends SqliteWriteKind>(
    op: Extract<SqliteWriteOp, { op: K }>,
    lazy = false,
  ): Promise<SqliteWriteResults[K]> {
    if (closed) return Promise.reject(new Error('relay store is closed'))
    if (broken !== undefined) return Promise.reject(broken)
    return new Promise<SqliteWriteResults[K]>((resolve, reject) => {
      // The writer answers op K with SqliteWriteResults[K] (sqlite-writes.ts).
      const settle = resolve as (value: SqliteWriteResults[SqliteWriteKind]) => void
      queue.push({ op, resolve: settle, reject })
      enqueued++
      if (!lazy) eager++
      if (queue.length >= maxBatch) flush()
      else if (lazy) scheduleLazy()
      else schedule()
    })
  }

  /** Send the queued writes (at most `maxBatch`) to the writer unless a batch is in flight. */
  function flush(): void {
    unschedule()
    if (inFlight !== undefined || queue.length === 0) return
    const batch = queue.length > maxBatch ? queue.splice(0, maxBatch) : queue
    if (batch === queue) queue = []
    // Whatever stays queued counts as eager: it is the next batch in any case.
    eager = queue.length
    inFlight = batch
    worker.ref()
    send({ type: 'batch', ops: batch.map((write) => write.op) })
  }

  function whenIdle(): Promise<void> {
    if (inFlight === undefined && queue.length === 0) return Promise.resolve()
    return new Promise((resolve) => idleWaiters.push(resolve))
  }

  function settleWaiters(): void {
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
    eager = 0
    settledCount += writes.length
    for (const write of writes) write.reject(error)
    settleWaiters()
  }

  function done(outcomes: SqliteWriteOutcome[], commits: SqliteCommitInfo[]): void {
    const batch = inFlight ?? []
    inFlight = undefined
    settledCount += batch.length
    // The next batch first: the writer commits it while this one's promises settle. Lazy
    // writes alone wait for company (scheduleLazy).
    if (eager > 0) flush()
    else {
      if (queue.length > 0) scheduleLazy()
      worker.unref()
    }
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
      else if ('ok' in outcome) write.resolve(outcome.ok)
      else if ('full' in outcome) write.reject(new MailboxFullError(outcome.full, outcome.reason))
      else if ('relayFull' in outcome) write.reject(new RelayStorageFullError())
      else write.reject(errorFromWire(outcome.error))
    }
    settleWaiters()
  }

  worker.on('message', (message: FromSqliteWriter) => {
    if (message.type === 'done') done(message.outcomes, message.commits)
    else if (message.type === 'fatal') fail(errorFromWire(message.error))
  })
  worker.on('error', (error) => fail(error))
  worker.on('exit', (code) => fail(new Error(`relay store writer exited (code ${code})`)))

  let stopped: Promise<void> | undefined

  return {
    enqueue,

    settled() {
      if (settledCount >= enqueued) return Promise.resolve()
      // Someone waits now: lazy writes go with the next batch, at once.
      if (eager < queue.length) {
        eager = queue.length
        if (inFlight === undefined) flush()
      }
      const upTo = enqueued
      return new Promise<void>((resolve) => settledWaiters.push({ upTo, resolve }))
    },

    get closed() {
      return closed
    },

    close() {
      if (stopped !== undefined) return stopped
      closed = true
      flush()
      stopped = (async () => {
        await whenIdle()
        if (broken === undefined) {
          await new Promise<void>((resolve) => {
            worker.once('exit', () => resolve())
            worker.ref()
            send({ type: 'close' })
          })
        } else {
          await worker.terminate().catch(() => 0)
        }
      })()
      return stopped
    },
  }
}
