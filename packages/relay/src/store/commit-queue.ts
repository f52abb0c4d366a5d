/**
 * The group commit of the SQLite and PostgreSQL stores, and their shape (`queuedStore`): a batch is ONE transaction and a write
 * settles after the COMMIT covering it (PROFILE §9: 202 once durable). One batch in flight;
 * what queues meanwhile is the next (at most `maxBatch`), so batches grow with the load. A lazy
 * write (a WebSocket ack frame) starts no batch: it rides with the next write, after
 * LAZY_DELAY_MS, or at `settled()`, else every ack frame would be an fsync of its own.
 */
import {
  forgetAtOf,
  newSubscription,
  type PublishOutcome,
  publishMailboxes,
  publishResult,
} from './common.js'
import type { PublishInput, RelayStore, StorePublishResult, Subscription } from './types.js'

export type Settlement = { ok: unknown } | { error: unknown }

/**
 * Runs one batch: one settlement per write, in order, or a rejection for all of them. It may
 * call `decided` with each write's outcome before its COMMIT (see PublishHooks.decided).
 */
export type BatchRunner<Op> = (
  ops: Op[],
  decided: (outcomes: unknown[]) => void,
) => Promise<Settlement[]>

export interface CommitQueue<Op> {
  /** `decided`: told the write's outcome before its commit, when the runner knows it. */
  enqueue<T>(op: Op, lazy?: boolean, decided?: (outcome: unknown) => void): Promise<T>
  /** Resolves once every write enqueued before the call has settled. */
  settled(): Promise<void>
  readonly closed: boolean
  /** Every write queued and to come fails with `error` (a writer that is gone). */
  fail(error: Error): void
  /** Stop taking writes; resolves once what was queued has settled. */
  close(): Promise<void>
}

const LAZY_DELAY_MS = 20

type Queued<Op> = {
  op: Op
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  decided?: ((outcome: unknown) => void) | undefined
}

export function commitQueue<Op>(
  run: BatchRunner<Op>,
  maxBatch: number,
  maxDelayMs = 0,
): CommitQueue<Op> {
  let queue: Queued<Op>[] = []
  let inFlight = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let immediate: ReturnType<typeof setImmediate> | undefined
  /** Queued writes that are not lazy: they start a batch. */
  let eager = 0
  let closed = false
  let broken: Error | undefined
  /** Writes enqueued and settled so far (batches settle in order). */
  let enqueued = 0
  let settledCount = 0
  let waiters: Array<{ upTo: number; resolve: () => void }> = []

  function unschedule(): void {
    clearTimeout(timer)
    if (immediate !== undefined) clearImmediate(immediate)
    timer = undefined
    immediate = undefined
  }

  function schedule(lazy: boolean): void {
    if (inFlight || immediate !== undefined || (timer !== undefined && lazy)) return
    unschedule()
    if (lazy) timer = setTimeout(flush, LAZY_DELAY_MS)
    else if (maxDelayMs > 0) timer = setTimeout(flush, maxDelayMs)
    else immediate = setImmediate(flush)
  }

  function flush(): void {
    unschedule()
    if (inFlight || queue.length === 0) return
    const batch = queue.splice(0, maxBatch)
    // What stays queued is the next batch in any case.
    eager = queue.length
    inFlight = true
    // A runner that throws rejects the batch as one that rejects.
    const decided = (outcomes: unknown[]) =>
      batch.forEach((write, i) => {
        try {
          write.decided?.(outcomes[i])
        } catch {
          // A hook's failure is its own: the write commits whatever it did.
        }
      })
    const ops = batch.map((write) => write.op)
    new Promise<Settlement[]>((resolve) => resolve(run(ops, decided))).then(
      (outcomes) => done(batch, outcomes),
      (error: unknown) => done(batch, undefined, error),
    )
  }

  function done(batch: Queued<Op>[], outcomes?: Settlement[], failure?: unknown): void {
    inFlight = false
    settledCount += batch.length
    // The next batch first: it commits while this one's promises settle.
    if (eager > 0 || (closed && queue.length > 0)) flush()
    else if (queue.length > 0) schedule(true)
    batch.forEach((write, i) => {
      const outcome = outcomes?.[i]
      if (outcome === undefined) write.reject(failure ?? new Error('relay store: no outcome'))
      else if ('ok' in outcome) write.resolve(outcome.ok)
      else write.reject(outcome.error)
    })
    wake()
  }

  function wake(): void {
    waiters = waiters.filter((w) => (w.upTo <= settledCount ? void w.resolve() : true))
  }

  function settled(): Promise<void> {
    if (settledCount >= enqueued) return Promise.resolve()
    // Someone waits now: lazy writes go at once.
    if (eager < queue.length) {
      eager = queue.length
      if (!inFlight) flush()
    }
    const upTo = enqueued
    return new Promise<void>((resolve) => waiters.push({ upTo, resolve }))
  }

  return {
    enqueue<T>(op: Op, lazy = false, decided?: (outcome: unknown) => void): Promise<T> {
      if (closed) return Promise.reject(new Error('relay store is closed'))
      if (broken !== undefined) return Promise.reject(broken)
      return new Promise<T>((resolve, reject) => {
        queue.push({ op, resolve: resolve as (value: unknown) => void, reject, decided })
        enqueued++
        if (!lazy) eager++
        if (queue.length >= maxBatch) flush()
        else schedule(lazy)
      })
    },
    settled,
    get closed() {
      return closed
    },
    fail(error) {
      broken ??= error
      unschedule()
      const writes = queue
      queue = []
      eager = 0
      settledCount += writes.length
      for (const write of writes) write.reject(broken)
      wake()
    },
    close() {
      closed = true
      flush()
      return settled()
    },
  }
}

/** One write of a queued store (SQLite, PostgreSQL), as its writer runs it. */
export type WriteOp =
  | (Required<Omit<PublishInput, 'forgetAt' | 'skipFull' | 'bucket'>> & {
      op: 'publish'
      /** Resolved; the mailboxes without repeats. */
      forgetAt: number
      skipFull: boolean
      /** The keyed hash of the client address bucket (PROFILE §9), never the address. */
      bucket: string | null
    })
  | { op: 'ack'; mailbox: string; messageId: string; from: string | null }
  | { op: 'expire'; now: number }
  | (Omit<Subscription, 'webhook'> & {
      op: 'subscribe'
      webhookUrl: string | null
      verified: boolean
    })
  | { op: 'unsubscribe'; id: string; agent: string }
  | { op: 'setWebhookVerified'; id: string; verified: boolean }
  /** Readiness (`checkWritable`): a write turn that changes nothing. */
  | { op: 'check' }

type ReadName = 'subscriptions' | 'mailboxState' | 'topicSubscribers' | 'retrieve' | 'isDuplicate'
/** The reads of a queued store, synchronous (SQLite) or not. */
export type StoreReads = {
  [K in ReadName | 'usage' | 'countMailboxes']-?: (
    ...args: Parameters<NonNullable<RelayStore[K]>>
  ) => Awaited<ReturnType<NonNullable<RelayStore[K]>>> | ReturnType<NonNullable<RelayStore[K]>>
}

/** `f` as a call of a queued store: refused once `queue` closed, its failure through `guard`. */
export const storeCall =
  (queue: CommitQueue<WriteOp>, guard: <T>(call: Promise<T>) => Promise<T>) =>
  <A extends unknown[], T>(f: (...args: A) => T | Promise<T>) =>
  (...args: A): Promise<T> =>
    queue.closed
      ? Promise.reject(new Error('relay store is closed'))
      : guard(Promise.resolve().then(() => f(...args)))

/**
 * A RelayStore writing through `queue`, reading `reads`, hashing buckets with `hashBucket` (see
 * `bucketHasher`) before they leave for the writer; `guard` maps failures for the relay.
 */
export function queuedStore(
  queue: CommitQueue<WriteOp>,
  reads: StoreReads,
  hashBucket: (bucket: string | undefined) => string | null,
  close: () => Promise<void>,
  guard: <T>(call: Promise<T>) => Promise<T> = (call) => call,
) {
  const write = <T>(op: WriteOp, lazy?: boolean, decided?: (outcome: unknown) => void) =>
    guard(queue.enqueue<T>(op, lazy, decided))
  const read = storeCall(queue, guard)
  let gone: Promise<void> | undefined
  return {
    async subscribe(input) {
      const s = newSubscription(input)
      const { url = null, verified = false } = s.webhook ?? {}
      await write({ op: 'subscribe', ...s, webhookUrl: url, verified })
      return s
    },
    unsubscribe: (id, agent) => write<boolean>({ op: 'unsubscribe', id, agent }),
    setWebhookVerified: (id, verified) => write<void>({ op: 'setWebhookVerified', id, verified }),
    subscriptions: read(reads.subscriptions),
    mailboxState: read(reads.mailboxState),
    topicSubscribers: read(reads.topicSubscribers),
    async publish(input, hooks) {
      const mailboxes = publishMailboxes(input)
      if (mailboxes.length === 0) {
        if (queue.closed) throw new Error('relay store is closed')
        return []
      }
      const forgetAt = forgetAtOf(input)
      const op: WriteOp = {
        ...input,
        op: 'publish',
        forgetAt,
        mailboxes,
        skipFull: !!input.skipFull,
        bucket: hashBucket(input.bucket),
      }
      // A refusal (not an array) is not pushed: it rejects once the batch settles.
      const decided =
        hooks?.decided &&
        ((o: unknown) => Array.isArray(o) && hooks.decided?.(o as StorePublishResult[]))
      return publishResult(await write<PublishOutcome>(op, false, decided))
    },
    isDuplicate: read(reads.isDuplicate),
    retrieve: read(reads.retrieve),
    ack: (mailbox, messageId, from, options) =>
      write<number>({ op: 'ack', mailbox, messageId, from: from ?? null }, options?.lazy),
    expire: (now) => write<number>({ op: 'expire', now }),
    settled: () => queue.settled(),
    usage: read(reads.usage),
    // Through the group commit: the write lock and a COMMIT, as a publish would take.
    checkWritable: () => write<void>({ op: 'check' }),
    countMailboxes: read(reads.countMailboxes),
    close: () => (gone ??= close()),
  } satisfies RelayStore
}
