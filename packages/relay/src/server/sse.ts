/**
 * The Server-Sent Events body of `GET /relay/stream` (PROFILE §9): `id: <cursor>`,
 * `event: message`, `data: <message JSON>`, and a comment line at least every 15 s.
 *
 * The stream is pull-driven (high-water mark 0): bytes leave our buffer only when the server
 * adapter reads them, so the buffer is exactly what the client has not taken yet. The feed
 * waits while it is above a low-water mark; past `maxBytes`, or when the client read nothing for
 * `stallTimeoutMs` while data waited, the connection is dropped (the client resumes from its
 * last `id`).
 */
import { utf8Encode } from '@agentmsg/core/encoding'
import type { MailboxEntry } from '../store/types.js'
import type { FeedSink } from './feed.js'

export interface SseChannelOptions {
  heartbeatMs: number
  maxBytes: number
  stallTimeoutMs: number
  /** Called once when the channel ends (client gone, dropped, or closed by the relay). */
  onEnd: () => void
}

/**
 * Sent before the relay ends a stream because it is stopping: a comment and the SSE `retry:`
 * field, so clients reconnect after a second (to this relay restarted, or another) and resume
 * with `Last-Event-ID`.
 */
export const SSE_RESTART_HINT = ': relay restarting\nretry: 1000\n\n'

/** Format one SSE event of a mailbox entry. The stored JSON never holds a raw LF. */
export function sseEvent(entry: MailboxEntry): string {
  return `id: ${entry.cursor}\nevent: message\ndata: ${entry.json}\n\n`
}

export class SseChannel implements FeedSink {
  readonly stream: ReadableStream<Uint8Array>
  readonly #o: SseChannelOptions
  #chunks: string[] = []
  #bytes = 0
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined
  #pendingPull: (() => void) | undefined
  #readyWaiters: Array<(ok: boolean) => void> = []
  #lastPull = Date.now()
  #ended = false
  readonly #timer: ReturnType<typeof setInterval>

  constructor(options: SseChannelOptions) {
    this.#o = options
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller
        },
        pull: (controller) => {
          this.#lastPull = Date.now()
          if (this.#ended) return
          if (this.#chunks.length > 0) {
            this.#flush(controller)
            return
          }
          return new Promise<void>((resolve) => {
            this.#pendingPull = () => {
              this.#pendingPull = undefined
              if (!this.#ended && this.#chunks.length > 0) this.#flush(controller)
              resolve()
            }
          })
        },
        cancel: () => this.#end(false),
      },
      { highWaterMark: 0 },
    )
    // A first comment so headers and something readable go out at once.
    this.push(': agentmsg relay stream\n\n')
    this.#timer = setInterval(() => this.#tick(), options.heartbeatMs)
    this.#timer.unref?.()
  }

  /** Queue text for the client; drops the connection when over the bound. */
  push(text: string): void {
    if (this.#ended) return
    this.#chunks.push(text)
    this.#bytes += text.length
    if (this.#bytes > this.#o.maxBytes) {
      this.#drop()
      return
    }
    this.#pendingPull?.()
  }

  send(entry: MailboxEntry): void {
    this.push(sseEvent(entry))
  }

  ready(): Promise<boolean> {
    if (this.#ended) return Promise.resolve(false)
    if (this.#bytes <= this.#o.maxBytes / 4) return Promise.resolve(true)
    return new Promise((resolve) => this.#readyWaiters.push(resolve))
  }

  /** End the stream normally (relay closing), after the reconnect hint. */
  close(): void {
    if (this.#ended) return
    this.push(SSE_RESTART_HINT)
    this.#end(true)
  }

  #flush(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const text = this.#chunks.length === 1 ? this.#chunks[0]! : this.#chunks.join('')
    this.#chunks = []
    this.#bytes = 0
    controller.enqueue(utf8Encode(text))
    const waiters = this.#readyWaiters
    this.#readyWaiters = []
    for (const w of waiters) w(true)
  }

  #tick(): void {
    if (this.#ended) return
    if (this.#bytes > 0 && Date.now() - this.#lastPull > this.#o.stallTimeoutMs) {
      this.#drop()
      return
    }
    this.push(': keep-alive\n\n')
  }

  #drop(): void {
    if (this.#ended) return
    this.#ended = true
    this.#cleanup()
    try {
      this.#controller?.error(new Error('slow consumer: stream dropped'))
    } catch {
      // already closed
    }
    this.#pendingPull?.()
  }

  #end(closeStream: boolean): void {
    if (this.#ended) return
    this.#ended = true
    this.#cleanup()
    if (closeStream) {
      // Hand over what is queued, then end.
      if (this.#chunks.length > 0 && this.#controller) {
        try {
          this.#flush(this.#controller)
        } catch {
          // cancelled meanwhile
        }
      }
      try {
        this.#controller?.close()
      } catch {
        // already closed or errored
      }
    }
    this.#pendingPull?.()
  }

  #cleanup(): void {
    clearInterval(this.#timer)
    const waiters = this.#readyWaiters
    this.#readyWaiters = []
    for (const w of waiters) w(false)
    this.#o.onEnd()
  }
}
