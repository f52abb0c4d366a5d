/**
 * The one capped body reader, for request bodies (servers) and response bodies (clients): it
 * counts while the body streams and cancels the stream as soon as the cap is passed, so an
 * endless body is never buffered whole (PROFILE §4, §6).
 */
import { concat } from '../bytes.js'
import { AgentMsgError, type ErrorCode } from '../errors.js'

// A server's read slot (PROFILE §6: 8 bodies read at once per address) ends when the body is in,
// not when the answer is: the server registers the release before handing the request on, and
// whoever reads or discards the body ends it.
const whenDone = new WeakMap<ReadableStream<Uint8Array>, () => void>()

/** Run `done` once `body` was read to its end, cut off, failed, or discarded. */
export function onBodyDone(body: ReadableStream<Uint8Array> | null, done: () => void): void {
  if (body !== null) whenDone.set(body, done)
}

function bodyDone(body: ReadableStream<Uint8Array>): void {
  const done = whenDone.get(body)
  whenDone.delete(body)
  done?.()
}

/** Tell the source the body will not be read (it may then stop receiving it). */
export function discardBody(body: ReadableStream<Uint8Array> | null): void {
  if (body === null) return
  bodyDone(body)
  if (!body.locked) body.cancel().catch(() => {})
}

/** Options of {@link readBody}. */
export interface ReadBodyOptions {
  /** Most bytes read; past them the stream is cancelled and the read gives `undefined`. */
  maxBytes: number
  /** Cancels the read; it rejects with the signal's reason. */
  signal?: AbortSignal | undefined
  /** The whole body must be in within this, else the stream is cancelled. @default none */
  timeoutMs?: number | undefined
  /**
   * The code of the error a broken or late body rejects with: `invalid_format` for a request
   * body (the client's problem), `unavailable` for a response body (a network failure, retried).
   * @default 'unavailable'
   */
  failure?: ErrorCode
}

/**
 * Read a body to its end. Resolves with its bytes, or `undefined` when it is larger than
 * `maxBytes` (a response's `Content-Length` says so before anything is read).
 */
export async function readBody(
  source: Request | Response | ReadableStream<Uint8Array> | null,
  options: ReadBodyOptions,
): Promise<Uint8Array | undefined> {
  const { maxBytes, signal, timeoutMs, failure = 'unavailable' } = options
  signal?.throwIfAborted()
  const body = source instanceof ReadableStream || source === null ? source : source.body
  if (body === null) return new Uint8Array(0)
  if (!(source instanceof ReadableStream) && source !== null) {
    if (Number(source.headers.get('content-length') ?? 0) > maxBytes) {
      body.cancel().catch(() => {})
      return undefined
    }
  }
  const reader = body.getReader()
  let late: AgentMsgError | undefined
  const stop = (reason?: unknown) => void reader.cancel(reason).catch(() => {})
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          late = new AgentMsgError(failure, `the body did not arrive within ${timeoutMs / 1000} s`)
          stop()
        }, timeoutMs)
  const onAbort = () => stop(signal?.reason)
  signal?.addEventListener('abort', onAbort, { once: true })
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>
      try {
        chunk = await reader.read()
      } catch (error) {
        throw new AgentMsgError(failure, 'the body could not be read', { cause: error })
      }
      if (late) throw late
      signal?.throwIfAborted()
      if (chunk.done) break
      total += chunk.value.byteLength
      // Not awaited: a source may only settle its cancel once the peer has gone.
      if (total > maxBytes) return void stop()
      chunks.push(chunk.value)
    }
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
    bodyDone(body)
  }
  return concat(chunks, total)
}
