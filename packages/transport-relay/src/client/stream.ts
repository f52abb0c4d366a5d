/**
 * The part of a relay stream that SSE and WebSocket share: reconnect with backoff, resume from
 * the cursor of the last message the handler completed, verification before the handler,
 * acknowledgement after it, and no delivery of the same entry twice.
 */
import {
  AgentMsgError,
  isAgentMsgError,
  type AbortOptions,
  type Message,
  type VerifyResult,
} from '@agentmsg/core'
import { backoffDelay, DEFAULT_BACKOFF_CAP_MS, sleep, type BackoffOptions } from './backoff.js'
import { checkDelivered, type CheckContext, type RejectedDelivery } from './verify-delivery.js'

/** A verified message handed to a stream handler. */
export interface RelayDelivery {
  /** The message; its signatures verified after the relay delivered it (SPEC §5.7.3). */
  message: Message
  /** The verdict: key source, authentication level, every verified signature. */
  verified: VerifyResult
  /** The relay's cursor of this entry. Persist it to resume a later stream with `after`. */
  cursor: string
  /**
   * Acknowledge now (the relay deletes the entry). Optional: the stream acknowledges by itself
   * once the handler's promise resolved; acknowledging twice is harmless.
   */
  ack(): Promise<void>
}

/** Handles one message; the stream waits for it before the next one. */
export type RelayHandler = (delivery: RelayDelivery) => void | Promise<void>

/** How a stream receives: Server-Sent Events over `fetch`, or a WebSocket. */
export type StreamMode = 'sse' | 'ws'

/** Options for `RelayClient.stream`. */
export interface StreamOptions extends AbortOptions {
  /** @default 'sse' */
  mode?: StreamMode
  /** Resume after this cursor (a previous handle's `cursor`). @default the oldest held */
  after?: string
  /**
   * A delivered message failed validation or verification: it is not handed to the handler and
   * not acknowledged (it stays in the mailbox for inspection until the relay expires it).
   */
  onRejected?: (rejected: RejectedDelivery) => void
  /**
   * A connection ended with an error, a handler threw, or an acknowledgement failed. The stream
   * carries on (reconnecting) unless the error is fatal; fatal errors also reject `done`.
   */
  onError?: (error: unknown) => void
  /** Reconnect backoff. @default full jitter, 500 ms base, 30 s cap */
  backoff?: BackoffOptions
  /**
   * SSE: reconnect when nothing (not even the relay's keep-alive comment, sent at least every
   * 15 s) arrived for this long while waiting. @default 45_000
   */
  idleTimeoutMs?: number
  /**
   * Acknowledgements in flight at once. 1: a message's acknowledgement is answered before the
   * next message is handled. More: the next message is handled while earlier acknowledgements
   * are in flight (over SSE each is an HTTP round trip, which otherwise bounds the stream's
   * rate); the cursor still only moves past messages whose handler completed, and `close()`
   * waits for the acknowledgements in flight. An acknowledgement that fails is reported through
   * `onError` either way (the message stays held). @default 1
   */
  ackConcurrency?: number
}

/** A running stream. */
export interface StreamHandle {
  /**
   * The cursor of the last message completed (handled and acknowledged, or rejected; with
   * `ackConcurrency` > 1, handled and its acknowledgement sent).
   */
  readonly cursor: string | undefined
  /**
   * Settles when the stream stopped: resolves after `close()` or the signal's abort, rejects
   * with the error that stopped it otherwise (a 4xx other than 429 from the relay, such as
   * `forbidden`, or a signer the relay cannot use).
   */
  readonly done: Promise<void>
  /** Stop: drops the connection, waits for the handler in progress, then resolves. */
  close(): Promise<void>
}

/** Acknowledge one entry, over whichever channel the connection offers. */
export type AckFn = (messageId: string, from: string) => Promise<void>

/** What a connector is given for one connection. */
export interface ConnectContext {
  /** Resume after this cursor (`undefined`: from the oldest held message). */
  after: string | undefined
  /** Aborted when the stream closes. */
  signal: AbortSignal
  /**
   * Hand over one delivered entry; resolves once it was completed. Rejects when the connection
   * must be dropped and resumed later (handler failure, key lookup unavailable).
   */
  deliver(cursor: string | undefined, raw: unknown, ack: AckFn): Promise<void>
}

/** Opens one connection; resolves when it ended cleanly, rejects with why it ended otherwise. */
export type Connector = (ctx: ConnectContext) => Promise<void>

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
  handler: RelayHandler
  check: CheckContext
  options: StreamOptions
}

/** Run a stream until closed or fatally failed. */
export function runStream(input: RunStreamInput): StreamHandle {
  const { connect, handler, check, options } = input
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

  const complete = (at: string | undefined, key?: string) => {
    progressed = true
    if (at === undefined) return
    cursor = at
    cursors.add(at)
    if (key !== undefined) keys.add(key)
  }

  const deliver = async (at: string | undefined, raw: unknown, ackVia: AckFn): Promise<void> => {
    if (stop.signal.aborted) return
    // An entry already completed (a relay that resent after a resume): skip it.
    if (at !== undefined && cursors.has(at)) return
    const checked = await checkDelivered(raw, check, at)
    if (!checked.ok) {
      const { error } = checked.rejected
      // A key lookup that failed for now says nothing about the message: retry it later.
      if (error.code === 'unavailable') throw new ResumeLater(error, error.retryAfter)
      try {
        options.onRejected?.(checked.rejected)
      } catch (e) {
        report(e)
      }
      // Skip it from now on (it is not acknowledged, so it stays visible to `retrieve`).
      complete(at)
      return
    }
    const { message, verified } = checked
    const id = message.message_id
    const from = message.from.agent
    const key = `${from}\n${id}`
    // One acknowledgement at a time per entry; a failed one may be tried again.
    let pending: Promise<void> | undefined
    const ack = (): Promise<void> => {
      pending ??= (async () => {
        try {
          await ackVia(id, from)
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
    if (!keys.has(key)) {
      try {
        await handler({ message, verified, cursor: at ?? '', ack })
      } catch (e) {
        throw new ResumeLater(e)
      }
    }
    // Handled but not acknowledged: it stays in the mailbox; a later stream that starts
    // before this cursor would see it again.
    const acked = ack().catch(report)
    if (ackLimit === 1) {
      await acked
      complete(at, key)
      return
    }
    // Pipelined: the handler completed, so the cursor may pass this entry now.
    complete(at, key)
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
      const delay = Math.max(backoffDelay(attempt, base), retryAfterMs)
      attempt++
      await sleep(delay, stop.signal)
    }
  }

  /** The stream's run, then the acknowledgements still in flight. */
  const runAll = async () => {
    try {
      await run()
    } finally {
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
