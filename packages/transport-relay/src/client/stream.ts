/**
 * What SSE and WebSocket streams share: reconnect with backoff, resume after the last completed
 * entry, acknowledge after the handler (SSE in batches, PROFILE §9), no entry handed over twice.
 */
import { AgentMsgError, isAgentMsgError } from '@agentmsg/core'
import { Backoff, sleep } from '@agentmsg/core/http'
import { AckBatcher, type AckManyFn, batchable, entryAck } from './ack-batch.js'
import { STREAM_BACKOFF } from './http.js'
import type {
  AckFn,
  ConnectContext,
  Connector,
  RelayStreamHandler,
  StreamHandle,
  StreamOptions,
} from './stream-types.js'

/** The handler failed: drop the connection, resume later (not before `retryAfter` seconds). */
class ResumeLater extends Error {
  constructor(
    readonly reason: unknown,
    readonly retryAfter?: number,
  ) {
    super(reason instanceof Error ? reason.message : String(reason), { cause: reason })
  }
}

/** What retrying cannot cure: a relay's 4xx other than 429, or a local refusal (an address). */
export function isFatal(error: unknown): boolean {
  return isAgentMsgError(error) && !error.shouldRetry()
}

/** A relay frame or event that is not what PROFILE §9 says: drop the connection and retry. */
export function protocolError(message: string): AgentMsgError {
  return new AgentMsgError('unavailable', `relay protocol error: ${message}`)
}

const REMEMBERED = 10_000

/**
 * How long an SSE ack waits for company. At 500 messages/s, one batch per round trip made the
 * relay's CPU per message 1.55× WebSocket's; 25 ms made it 1.03×. A late ack costs nothing.
 */
const ACK_LINGER_MS = 25

/** A set that forgets its oldest members. */
class RecentSet extends Set<string> {
  override add(v: string): this {
    this.delete(v)
    super.add(v)
    if (this.size > REMEMBERED) this.delete(this.values().next().value!)
    return this
  }
}

/** Inputs of {@link runStream}: `ackOne` over HTTP, `ackMany` one `POST /relay/ack` batch. */
export interface RunStreamInput {
  connect: Connector
  handler: RelayStreamHandler
  options: StreamOptions
  ackOne: AckFn
  ackMany: AckManyFn
}

/** Run a stream until closed or fatally failed. */
export function runStream(input: RunStreamInput): StreamHandle {
  const { connect, handler, options } = input
  const stop = new AbortController()
  const cursors = new RecentSet()
  const keys = new RecentSet()
  let cursor = options.after
  let progressed = false

  const report = (error: unknown) => {
    try {
      options.onError?.(error)
    } catch {
      // a throwing reporter must not stop the stream
    }
  }
  const batcher = new AckBatcher(input.ackMany, report, undefined, ACK_LINGER_MS)

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
    // Completed already (a relay that resent after a resume): skip.
    if (at !== undefined && cursors.has(at)) return
    const { messageId: id, from } = message
    const key = id !== undefined && from !== undefined ? `${from}\n${id}` : undefined
    const ackVia = via === 'batch' ? input.ackOne : via
    const entry = entryAck(key === undefined ? undefined : () => ackVia(id!, from!))
    // The same message under another cursor (a re-publish stored anew) was handled already.
    if (key === undefined || !keys.has(key)) {
      try {
        await handler({ ...message, cursor: at ?? '', ack: entry.ack })
      } catch (e) {
        throw new ResumeLater(e, isAgentMsgError(e) ? e.retryAfter : undefined)
      }
    }
    // An entry no ack can name (PROFILE §9 envelopes): skipped by its cursor.
    if (key === undefined) return complete(at)
    // SSE: the cursor moves now, the ack goes with the next batch (unless the handler sent it).
    if (via === 'batch' && !entry.pending && batchable(id!, from!)) {
      await batcher.add({ messageId: id!, from: from! })
    } else await entry.ack().catch(report)
    return complete(at, key)
  }

  const run = async () => {
    const settings = { ...STREAM_BACKOFF, ...options.backoff }
    const backoff = new Backoff(settings)
    while (!stop.signal.aborted) {
      const started = Date.now()
      progressed = false
      let retryAfter: number | undefined
      try {
        await connect({ after: cursor, signal: stop.signal, deliver })
      } catch (error) {
        if (stop.signal.aborted) break
        if (!(error instanceof ResumeLater) && isFatal(error)) throw error
        const reason = error instanceof ResumeLater ? error.reason : error
        report(reason)
        retryAfter = (error as { retryAfter?: number } | undefined)?.retryAfter
      }
      if (stop.signal.aborted) break
      // A connection that made progress, or stayed up a while, was a success.
      if (progressed || Date.now() - started >= settings.capMs) backoff.reset()
      await sleep(Math.max(backoff.next(), (retryAfter ?? 0) * 1000), stop.signal)
    }
  }

  const onAbort = () => stop.abort(options.signal?.reason)
  if (options.signal?.aborted) stop.abort(options.signal.reason)
  else options.signal?.addEventListener('abort', onAbort, { once: true })

  // The acknowledgements still pending go before `done` settles.
  const done = run()
    .finally(() => batcher.flush())
    .then(
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
