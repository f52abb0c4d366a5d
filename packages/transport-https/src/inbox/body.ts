/** Reading a request body with a size cap, counting while it streams (PROFILE §6). */
import { invalidFormat } from '@agentmsg/core/http'

/** Largest request body read: 1 MiB of message + 64 KiB for trace and whitespace (PROFILE §6). */
export const MAX_BODY_BYTES = 1_048_576 + 65_536

// A body's read slot (PROFILE §6: 8 bodies read at once per address) and who ends it: a
// server registers the release before handing the request on, and the read or the discard of
// that body ends it, whichever endpoint does it.
const whenDone = new WeakMap<ReadableStream<Uint8Array>, () => void>()

/**
 * Run `done` once `body` was read to its end, cut off past its limit, failed or discarded
 * through {@link readLimited} / {@link discardBody}. Servers use it to end a read slot at the
 * moment the body is in, not when the answer is.
 */
export function onBodyDone(body: ReadableStream<Uint8Array> | null, done: () => void): void {
  if (body !== null) whenDone.set(body, done)
}

function bodyDone(body: ReadableStream<Uint8Array>): void {
  const done = whenDone.get(body)
  if (done === undefined) return
  whenDone.delete(body)
  done()
}

/** Options of {@link readLimited}. */
export interface ReadLimitedOptions {
  /**
   * Give up when the whole body has not arrived after this many ms: the stream is cancelled
   * and the read rejects with `invalid_format` (PROFILE §6: a body within 30 s of its headers).
   * @default no deadline
   */
  timeoutMs?: number
}

/**
 * Read `body` to the end, or stop as soon as more than `limit` bytes arrived: then the stream
 * is cancelled (the rest is never read) and the result is `undefined`. At most `limit` bytes
 * plus one chunk are ever held. A stream that errors (client gone) or misses `timeoutMs` →
 * `invalid_format`.
 */
export async function readLimited(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  options: ReadLimitedOptions = {},
): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array(0)
  const reader = body.getReader()
  let timer: ReturnType<typeof setTimeout> | undefined
  let late: Promise<never> | undefined
  if (options.timeoutMs !== undefined) {
    const ms = options.timeoutMs
    late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BodyTimeout(ms)), ms)
    })
    late.catch(() => undefined)
  }
  try {
    return await readAll(reader, limit, late)
  } finally {
    if (timer !== undefined) clearTimeout(timer)
    bodyDone(body)
  }
}

class BodyTimeout {
  constructor(readonly ms: number) {}
}

async function readAll(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limit: number,
  late: Promise<never> | undefined,
): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>
    try {
      chunk = await (late === undefined ? reader.read() : Promise.race([reader.read(), late]))
    } catch (error) {
      if (error instanceof BodyTimeout) {
        reader.cancel().catch(() => undefined)
        throw invalidFormat(`the request body did not arrive within ${error.ms / 1000} s`)
      }
      // The client went away or sent a broken body: its problem, not a server error.
      throw invalidFormat('the request body could not be read')
    }
    const { done, value } = chunk
    if (done) break
    total += value.byteLength
    if (total > limit) {
      // Not awaited: a source may only settle its cancel once the peer has gone.
      reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

/** Tell the source we will not read `body` (it may then stop receiving it). */
export function discardBody(body: ReadableStream<Uint8Array> | null): void {
  if (body === null) return
  bodyDone(body)
  if (!body.locked) body.cancel().catch(() => undefined)
}
