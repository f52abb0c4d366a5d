// The one capped body reader, for requests and responses: the stream is cancelled once past the
// cap, so an endless body is never buffered whole (PROFILE §4, §6).
import { concat } from '../bytes.js'
import { AgentMsgError, type ErrorCode } from '../errors.js'

// A server's read slot (PROFILE §6) ends when the body is in, not when the answer is: whoever
// reads or discards the body ends it.
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

export interface ReadBodyOptions {
  /** Past this the stream is cancelled and the read gives `undefined`. */
  maxBytes: number
  signal?: AbortSignal | undefined
  /** The whole body must be in within this. @default none */
  timeoutMs?: number | undefined
  /** `invalid_format` for a request body, `unavailable` for a response's. @default 'unavailable' */
  failure?: ErrorCode
}

/** Read a body to its end: its bytes, or `undefined` when larger than `maxBytes`. */
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
