/** Reading a request body with a size cap, counting while it streams (PROFILE §6). */
import { invalidFormat } from '@agentmsg/core'

/**
 * Read `body` to the end, or stop as soon as more than `limit` bytes arrived: then the stream
 * is cancelled (the rest is never read) and the result is `undefined`. At most `limit` bytes
 * plus one chunk are ever held. A stream that errors (client gone) → `invalid_format`.
 */
export async function readLimited(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array(0)
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>
    try {
      chunk = await reader.read()
    } catch {
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
  if (body !== null && !body.locked) body.cancel().catch(() => undefined)
}
