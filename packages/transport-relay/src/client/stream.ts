/**
 * The part of a relay stream that SSE and WebSocket share: reconnect with backoff, resume from
 * the cursor of the last entry the handler completed, acknowledgement after the handler (in
 * `POST /relay/ack` batches for SSE, PROFILE §9), and no delivery of the same entry twice.
 * Entries are handed over as they came: validating and verifying them is the receive
 * pipeline's job (SPEC §5.7.3: the relay is not trusted with integrity), the same for every
 * transport.
 */
import { AgentMsgError, isAgentMsgError } from '@agentmsg/core'
import { AckBatcher, type AckManyFn, batchable, MAX_ACK_BATCH } from './ack-batch.js'
import { DEFAULT_BACKOFF_CAP_MS, reconnectDelay, sleep } from './backoff.js'
import type {
  AckFn,
  ConnectContext,
  Connector,
  RelayEntry,
  RelayStreamHandler,
  StreamHandle,
  StreamOptions,
} from './stream-types.js'

export type {
  AckFn,
  ConnectContext,
  Connector,
  RelayEntry,
  RelayStreamHandler,
  StreamHandle,
  StreamMode,
  StreamOptions,
} from './stream-types.js'

/** The connection must end and the stream resume later, after at least `retryAfter` seconds. */
class ResumeLater extends Error {
  override readonly name = 'ResumeLater'
  constructor(
    readonly reason: unknown,
    readonly retryAfter?: number,
  ) {
    super(reason instanceof Error ? reason.message : String(reason), { cause: reason })
  }
}

/** Errors retrying cannot cure: the relay's 4xx other than 429 (and local refusals). */
function isFatal(error: unknown): boolean {
  if (error instanceof ResumeLater) return false
  return isAgentMsgError(error) && !error.shouldRetry()
}

const REMEMBERED = 10_000

/**
 * How long an SSE acknowledgement waits for company (AckBatcher `lingerMs`). Issue 12, SSE at
 * 500 messages/s (bench/proc, separate processes): one batch per round trip sent ~1,700
 * `POST /relay/ack` for 2,250 messages, each signed here and verified by the relay, whose CPU
 * per message was 1.55× WebSocket's; with 25 ms, 170 batches and 1.03×. An ack only decides what
 * a later stream resends (the receive pipeline answers a resend as a duplicate): a late one
 * costs nothing.
 */
const ACK_LINGER_MS = 25

/** A set that forgets its oldest members past `max`. */
class RecentSet {
  readonly #items = new Set<string>()
  constructor(readonly max: number) {}
  has(v: string): boolean {
    return this.#items.has(v)
  }
  add(v: string): void {
    this.#items.delete(v)
    this.#items.add(v)
    if (this.#items.size > this.max) this.#items.delete(this.#items.values().next().value!)
  }
}

/** Inputs of {@link runStream}. */
export interface RunStreamInput {
  connect: Connector
  handler: RelayStreamHandler
  options: StreamOptions
  /** Acknowledge one entry over HTTP: an entry's own `ack()` when the connection batches. */
  ackOne: AckFn
  /** Send one `POST /relay/ack` batch, for connections that deliver with `'batch'`. */
  ackMany: AckManyFn
}

/** Run a stream until closed or fatally failed. */
export function runStream(input: RunStreamInput): StreamHandle {
  const { connect, handler, options } = input
  const stop = new AbortController()
  const cursors = new RecentSet(REMEMBERED)
  const keys = new RecentSet(REMEMBERED)
  let cursor = options.after
  let progressed = false
  const ackLimit = Math.max(1, Math.floor(options.ackConcurrency ?? 1))
  /** Acknowledgements in flight (only with ackLimit > 1); each reports its own failure. */
  const acking = new Set<Promise<void>>()

  const report = (error: unknown) => {
    try {
      options.onError?.(error)
    } catch {
      // a throwing reporter must not stop the stream
    }
  }
  const batcher = new AckBatcher(input.ackMany, report, MAX_ACK_BATCH, ACK_LINGER_MS)

  const complete = async (at: string | undefined, key?: string) => {
    progressed = true
    if (key !== undefined) keys.add(key)
    if (at === undefined) return
    cursor = at
    cursors.add(at)
    try {
      await options.onCursor?.(at)
    } catch (e) {
      report(e)
    }
  }

  const deliver: ConnectContext['deliver'] = async (at, message, via) => {
    if (stop.signal.aborted) return
    // An entry already completed (a relay that resent after a resume): skip it.
    if (at !== undefined && cursors.has(at)) return
    const { messageId: id, from } = message
    const key = id !== undefined && from !== undefined ? `${from}\n${id}` : undefined
    const ackVia = via === 'batch' ? input.ackOne : via
    // One acknowledgement at a time per entry; a failed one may be tried again.
    let pending: Promise<void> | undefined
    const ack = (): Promise<void> => {
      if (key === undefined) return Promise.resolve()
      pending ??= (async () => {
        try {
          await ackVia(id!, from!)
        } catch (e) {
          // 404: nothing left to acknowledge (acknowledged before, or expired).
          if (!(isAgentMsgError(e) && e.code === 'not_found')) {
            pending = undefined
            throw e
          }
        }
      })()
      return pending
    }
    // The same message again under another cursor (a re-publish stored anew): already handled.
    if (key === undefined || !keys.has(key)) {
      const entry: RelayEntry = { cursor: at ?? '', value: message.value, ack }
      if (id !== undefined) entry.messageId = id
      if (from !== undefined) entry.from = from
      try {
        await handler(entry)
      } catch (e) {
        throw new ResumeLater(e, isAgentMsgError(e) ? e.retryAfter : undefined)
      }
    }
    // An entry no ack can name (PROFILE §9 envelopes): skipped by its cursor.
    if (key === undefined) return complete(at)
    if (via === 'batch') {
      // Handled: the cursor moves now; the acknowledgement goes with the next batch (unless
      // the handler acknowledged it itself). A batch that fails is reported; its entries stay.
      if (pending) await pending.catch(report)
      else if (batchable(id!, from!)) await batcher.add({ messageId: id!, from: from! })
      else await ack().catch(report)
      return complete(at, key)
    }
    // Handled but not acknowledged: it stays in the mailbox; a later stream that starts
    // before this cursor would see it again.
    const acked = ack().catch(report)
    if (ackLimit === 1) {
      await acked
      return complete(at, key)
    }
    // Pipelined: the handler completed, so the cursor may pass this entry now.
    await complete(at, key)
    acking.add(acked)
    void acked.then(() => acking.delete(acked))
    while (acking.size >= ackLimit) await Promise.race(acking)
  }

  const run = async () => {
    const base = options.backoff ?? {}
    const cap = base.capMs ?? DEFAULT_BACKOFF_CAP_MS
    let attempt = 0
    while (!stop.signal.aborted) {
      const started = Date.now()
      progressed = false
      let retryAfterMs = 0
      try {
        await connect({ after: cursor, signal: stop.signal, deliver })
      } catch (error) {
        if (stop.signal.aborted) break
        if (isFatal(error)) throw error
        const reason = error instanceof ResumeLater ? error.reason : error
        report(reason)
        const seconds =
          error instanceof ResumeLater
            ? error.retryAfter
            : isAgentMsgError(error)
              ? error.retryAfter
              : undefined
        if (seconds !== undefined) retryAfterMs = seconds * 1000
      }
      if (stop.signal.aborted) break
      // A connection that made progress, or stayed up a while, was a success: start over.
      if (progressed || Date.now() - started >= cap) attempt = 0
      const delay = Math.max(reconnectDelay(attempt, base), retryAfterMs)
      attempt++
      await sleep(delay, stop.signal)
    }
  }

  /** The stream's run, then the acknowledgements still pending or in flight. */
  const runAll = async () => {
    try {
      await run()
    } finally {
      await batcher.flush()
      while (acking.size > 0) await Promise.all(acking)
    }
  }

  const onAbort = () => stop.abort(options.signal?.reason)
  if (options.signal?.aborted) stop.abort(options.signal.reason)
  else options.signal?.addEventListener('abort', onAbort, { once: true })

  const done = runAll().then(
    () => options.signal?.removeEventListener('abort', onAbort),
    (error: unknown) => {
      options.signal?.removeEventListener('abort', onAbort)
      stop.abort()
      report(error)
      throw error
    },
  )
  // `done` may go unobserved; its rejection is reported through onError as well.
  done.catch(() => {})

  return {
    get cursor() {
      return cursor
    },
    done,
    async close() {
      stop.abort()
      await done.catch(() => {})
    },
  }
}

/** A relay frame or event that is not what PROFILE §9 says: drop the connection and retry. */
export function protocolError(message: string): AgentMsgError {
  return new AgentMsgError('unavailable', `relay protocol error: ${message}`)
}
