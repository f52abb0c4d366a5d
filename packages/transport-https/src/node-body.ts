/**
 * A Node request body for the adapter's lazy `Request`: as a web stream (for any handler) or,
 * cheaper, as a reader for core's readBody. Either holds back the sender while it is not
 * read (a paused request stops reading the socket, so TCP stops the sender) and never buffers
 * it whole.
 */
import type { IncomingMessage } from 'node:http'

/** The request body as a web stream: pulled from the socket as it is read, never buffered whole. */
export function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let cancelled = false
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on('data', (chunk: Buffer) => {
          if (cancelled) return
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          // Back-pressure: a paused request stops reading the socket, so TCP stops the sender.
          if ((controller.desiredSize ?? 0) <= 0) req.pause()
        })
        req.on('end', () => cancelled || controller.close())
        req.on('close', () => {
          if (cancelled || req.complete) return
          controller.error(new Error('the client aborted the request'))
        })
        req.on('error', (error) => cancelled || controller.error(error))
      },
      pull: () => void req.resume(),
      cancel() {
        // Stop reading. The answer then closes the connection (see writeAnswer), which is
        // what ends an oversized upload early: the sender cannot push more than the socket
        // buffers hold.
        cancelled = true
        req.pause()
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  )
}

/**
 * The body as a reader for core's readBody: each chunk as it arrives, the request paused in
 * between, so TCP holds back the sender. `cancel()` stops reading (the answer then closes the
 * connection) without destroying the socket.
 */
export function bodyChunks(
  req: IncomingMessage,
): Pick<ReadableStreamDefaultReader<Uint8Array>, 'read' | 'cancel'> {
  const queue: Uint8Array[] = []
  let end: ReadableStreamReadResult<Uint8Array> | Error | undefined
  let waiting: ((next: ReadableStreamReadResult<Uint8Array> | Error) => void) | undefined
  const give = (next: ReadableStreamReadResult<Uint8Array> | Error) => {
    const wake = waiting
    waiting = undefined
    if (wake) wake(next)
    else if (next instanceof Error || next.done) end ??= next
    else queue.push(next.value)
  }
  const onData = (chunk: Buffer) => {
    req.pause()
    give({ done: false, value: chunk })
  }
  const onEnd = () => give({ done: true, value: undefined })
  const onClose = () => req.complete || give(new Error('the client aborted the request'))
  const stop = () => {
    req.off('data', onData).off('end', onEnd).off('close', onClose).off('error', give)
    req.pause()
  }
  req.on('data', onData).on('end', onEnd).on('close', onClose).on('error', give)
  return {
    read() {
      const next = queue.length > 0 ? { done: false as const, value: queue.shift()! } : end
      if (next instanceof Error) return Promise.reject(next)
      if (next) return Promise.resolve(next)
      req.resume()
      return new Promise((resolve, reject) => {
        waiting = (got) => (got instanceof Error ? reject(got) : resolve(got))
      })
    },
    // Also ends a read in progress, as a stream's cancel() does (readBody's timeout and abort).
    async cancel() {
      stop()
      give({ done: true, value: undefined })
    },
  }
}
