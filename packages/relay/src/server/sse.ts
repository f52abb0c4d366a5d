/**
 * The Server-Sent Events body of `GET /relay/stream` (PROFILE §9): `id: <cursor>`,
 * `event: message`, `data: <message JSON>`, and a comment line at least every heartbeat.
 *
 * The stream is pull-driven (high-water mark 0): the server adapter asks for more only once the
 * socket took what it was handed (Node: after 'drain'), so the bytes queued here and those
 * handed over since the last ask are what the client has not taken. The feed reads on only when
 * that is nothing: a stream holds at most a page unsent (PROFILE §9: 1 MiB + 64 KiB). When the
 * adapter asks for nothing for `stallTimeoutMs` while data waits, the stream errors, which the
 * adapter answers by cutting the connection (the client resumes from its last `id`).
 */
import { PROFILE } from '@agentmsg/core'
import { utf8Encode } from '@agentmsg/core/http'
import type { MailboxEntry } from '../store/types.js'
import type { FeedSink } from './feed.js'

export interface SseChannelOptions {
  /** @default PROFILE.streamCommentMs */
  heartbeatMs?: number | undefined
  /** @default PROFILE.streamStallMs */
  stallTimeoutMs?: number | undefined
  /** Told of bytes queued (+n) and taken by the client (−n), for the relay-wide bound. */
  unsent?: (delta: number) => void
  /** Called once when the channel ends (client gone, dropped, or closed by the relay). */
  onEnd: () => void
}

export class SseChannel implements FeedSink {
  readonly stream: ReadableStream<Uint8Array>
  readonly #o: SseChannelOptions
  #chunks: Uint8Array[] = []
  /** Bytes queued here, and bytes handed to the adapter since it last asked. */
  #queued = 0
  #handed = 0
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined
  #pendingPull: (() => void) | undefined
  #readyWaiters: Array<(ok: boolean) => void> = []
  #stall: ReturnType<typeof setTimeout> | undefined
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
          // Asked for more: the socket took all it was handed, which is progress.
          this.#o.unsent?.(-this.#handed)
          this.#handed = 0
          clearTimeout(this.#stall)
          this.#stall = undefined
          if (this.#ended) return
          if (this.#queued > 0) return this.#flush(controller, true)
          for (const w of this.#readyWaiters.splice(0)) w(true)
          return new Promise<void>((resolve) => {
            this.#pendingPull = () => {
              this.#pendingPull = undefined
              if (!this.#ended && this.#queued > 0) this.#flush(controller)
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
    this.#timer = setInterval(
      () => this.push(': keep-alive\n\n'),
      options.heartbeatMs ?? PROFILE.streamCommentMs,
    )
    this.#timer.unref?.()
  }

  /** Queue text for the client. */
  push(text: string): void {
    if (this.#ended) return
    const bytes = utf8Encode(text)
    this.#chunks.push(bytes)
    this.#queued += bytes.length
    this.#o.unsent?.(bytes.length)
    this.#armStall()
    this.#pendingPull?.()
  }

  send(entry: MailboxEntry): void {
    // The stored JSON never holds a raw LF.
    this.push(`id: ${entry.cursor}\nevent: message\ndata: ${entry.json}\n\n`)
  }

  /** True once the client took everything sent (PROFILE §9); false when the stream ended. */
  ready(): Promise<boolean> {
    if (this.#ended) return Promise.resolve(false)
    if (this.#pendingPull !== undefined && this.#queued === 0) return Promise.resolve(true)
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

  /** Hand the queued chunks over; they count as unsent until the adapter asks again. */
  #flush(controller: ReadableStreamDefaultController<Uint8Array>, arm = false): void {
    for (const chunk of this.#chunks) controller.enqueue(chunk)
    this.#chunks = []
    this.#handed += this.#queued
    this.#queued = 0
    if (arm) this.#armStall()
  }

  /** Data waits: unless the adapter asks again within the stall timeout, drop the stream. */
  #armStall(): void {
    const stallMs = this.#o.stallTimeoutMs ?? PROFILE.streamStallMs
    this.#stall ??= setTimeout(() => this.#end('drop'), stallMs)
    this.#stall.unref?.()
  }

  /** `close`: hand over what is queued, then end; `drop`: error the stream; else cancelled. */
  #end(how?: 'close' | 'drop'): void {
    if (this.#ended) return
    this.#ended = true
    clearInterval(this.#timer)
    clearTimeout(this.#stall)
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
