/**
 * The Server-Sent Events body of `GET /relay/stream` (PROFILE §9): `id: <cursor>`,
 * `event: message`, `data: <message JSON>`, and a comment line at least every heartbeat.
 *
 * The stream is pull-driven (high-water mark 0): bytes leave our buffer only when the server
 * adapter reads them, so the buffer is exactly what the client has not taken yet. The feed
 * waits while it is above a quarter of `maxBytes`; past `maxBytes`, or when the client read
 * nothing for `stallTimeoutMs` while data waited, the connection is dropped (the client resumes
 * from its last `id`).
 */
import { utf8Encode } from '@agentmsg/core/http'
import type { MailboxEntry } from '../store/types.js'
import type { FeedSink } from './feed.js'

export interface SseChannelOptions {
  heartbeatMs: number
  maxBytes: number
  stallTimeoutMs: number
  /** Called once when the channel ends (client gone, dropped, or closed by the relay). */
  onEnd: () => void
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
          if (this.#chunks.length > 0) return this.#flush(controller)
          return new Promise<void>((resolve) => {
            this.#pendingPull = () => {
              this.#pendingPull = undefined
              if (!this.#ended && this.#chunks.length > 0) this.#flush(controller)
              resolve()
            }
          })
        },
        cancel: () => this.#end(),
      },
      { highWaterMark: 0 },
    )
    // A first comment so headers and something readable go out at once.
    this.push(': agentmsg relay stream\n\n')
    this.#timer = setInterval(() => {
      if (this.#ended) return
      if (this.#bytes > 0 && Date.now() - this.#lastPull > this.#o.stallTimeoutMs) this.#end('drop')
      else this.push(': keep-alive\n\n')
    }, options.heartbeatMs)
    this.#timer.unref?.()
  }

  /** Queue text for the client; drops the connection when over the bound. */
  push(text: string): void {
    if (this.#ended) return
    this.#chunks.push(text)
    this.#bytes += text.length
    if (this.#bytes > this.#o.maxBytes) this.#end('drop')
    else this.#pendingPull?.()
  }

  send(entry: MailboxEntry): void {
    // The stored JSON never holds a raw LF.
    this.push(`id: ${entry.cursor}\nevent: message\ndata: ${entry.json}\n\n`)
  }

  ready(): Promise<boolean> {
    if (this.#ended) return Promise.resolve(false)
    if (this.#bytes <= this.#o.maxBytes / 4) return Promise.resolve(true)
    return new Promise((resolve) => this.#readyWaiters.push(resolve))
  }

  /**
   * End the stream because the relay stops: a comment and the SSE `retry:` field first, so
   * clients reconnect after a second (to this relay restarted, or another) with Last-Event-ID.
   */
  close(): void {
    if (this.#ended) return
    this.push(': relay restarting\nretry: 1000\n\n')
    this.#end('close')
  }

  #flush(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const text = this.#chunks.join('')
    this.#chunks = []
    this.#bytes = 0
    controller.enqueue(utf8Encode(text))
    for (const w of this.#readyWaiters.splice(0)) w(true)
  }

  /** `close`: hand over what is queued, then end; `drop`: error the stream; else cancelled. */
  #end(how?: 'close' | 'drop'): void {
    if (this.#ended) return
    this.#ended = true
    clearInterval(this.#timer)
    for (const w of this.#readyWaiters.splice(0)) w(false)
    this.#o.onEnd()
    const controller = this.#controller
    try {
      if (how === 'drop') controller?.error(new Error('slow consumer: stream dropped'))
      if (how === 'close' && controller) {
        if (this.#chunks.length > 0) this.#flush(controller)
        controller.close()
      }
    } catch {
      // Cancelled or closed meanwhile.
    }
    this.#pendingPull?.()
  }
}
