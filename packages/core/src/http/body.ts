// The one capped body reader, for requests and responses: the stream is cancelled once past the
// cap, so an endless body is never buffered whole (PROFILE §4, §6).
import { concat } from '../bytes.js'
import { AgentMsgError, type ErrorCode } from '../errors.js'

/**
 * A server adapter's cheaper way to a request's body (the Node one, transport-https): a reader
 * of its chunks, no web stream per request; `undefined` once the body was taken as a stream.
 */
const DIRECT = Symbol.for('agentmsg.body')
type Reader = Pick<ReadableStreamDefaultReader<Uint8Array>, 'read' | 'cancel'>
type Direct = { [DIRECT]?: () => Reader | undefined }
type Source = Request | Response | ReadableStream<Uint8Array> | null

// A server's read slot (PROFILE §6) ends when the body is in, not when the answer is: whoever
// reads or discards the body ends it. Keyed by the request, or by the stream.
const whenDone = new WeakMap<object, () => void>()

/** Run `done` once the body of `source` was read to its end, cut off, failed, or discarded. */
export function onBodyDone(source: Request | ReadableStream<Uint8Array> | null, done: () => void) {
  if (source !== null) whenDone.set(source, done)
}

function bodyDone(source: object | null): void {
  if (source === null) return
  const done = whenDone.get(source)
  whenDone.delete(source)
  done?.()
}

/** Tell the source the body will not be read (it may then stop receiving it). */
export function discardBody(source: Source): void {
  if (source === null) return
  bodyDone(source)
  if (source instanceof ReadableStream) {
    if (!source.locked) source.cancel().catch(() => {})
    return
  }
  const direct = (source as Direct)[DIRECT]?.()
  if (direct) direct.cancel().catch(() => {})
  else discardBody(source.body)
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
  source: Source,
  options: ReadBodyOptions,
): Promise<Uint8Array | undefined> {
  const { maxBytes, signal, timeoutMs, failure = 'unavailable' } = options
  signal?.throwIfAborted()
  if (source === null) return new Uint8Array(0)
  const isStream = source instanceof ReadableStream
  if (!isStream && Number(source.headers.get('content-length') ?? 0) > maxBytes) {
    discardBody(source)
    return undefined
  }
  const direct = isStream ? undefined : (source as Direct)[DIRECT]?.()
  const stream = isStream ? source : direct === undefined ? source.body : null
  if (direct === undefined && stream === null) return (bodyDone(source), new Uint8Array(0))
  const reader = direct ?? stream!.getReader()
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
    bodyDone(source)
    bodyDone(stream)
  }
  return concat(chunks, total)
}
