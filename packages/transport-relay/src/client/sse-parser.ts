/**
 * A Server-Sent Events parser over bytes (data stays bytes, for PROFILE §1's strict UTF-8) that
 * refuses an event at the cap (PROFILE §4) as its lines arrive, never buffering it whole.
 */
import { concat } from '@agentmsg/core/http'

/** One dispatched event. `id` and `event` are this event's own fields, when it had them. */
export interface SseEvent {
  id?: string
  event?: string
  data: Uint8Array
}

const LF = 0x0a
const CR = 0x0d
const COLON = 0x3a
const SPACE = 0x20

const decoder = new TextDecoder()

export class SseParser {
  /** The line not finished yet, in pieces. */
  #line: Uint8Array[] = []
  #lineBytes = 0
  /** Bytes of the current event's finished lines. */
  #eventBytes = 0
  #data: Uint8Array[] = []
  #id: string | undefined
  #event: string | undefined
  /** The last chunk ended with CR: an LF starting the next one belongs to it. */
  #afterCR = false
  #first = true

  /** `tooLarge` makes what {@link feed} throws when an event passes `maxEventBytes`. */
  constructor(
    readonly maxEventBytes: number,
    readonly tooLarge: () => Error,
  ) {}

  /** Feed a chunk; returns the events it completed. */
  feed(chunk: Uint8Array): SseEvent[] {
    const events: SseEvent[] = []
    let start = 0
    if (this.#afterCR && chunk[0] === LF) start = 1
    this.#afterCR = false
    for (let i = start; i < chunk.length; i++) {
      const c = chunk[i]!
      if (c !== LF && c !== CR) continue
      this.#push(chunk.subarray(start, i))
      this.#endLine(events)
      if (c === CR) {
        if (i + 1 === chunk.length) this.#afterCR = true
        else if (chunk[i + 1] === LF) i++
      }
      start = i + 1
    }
    if (start < chunk.length) this.#push(chunk.subarray(start))
    return events
  }

  #push(part: Uint8Array): void {
    if (part.byteLength === 0) return
    this.#line.push(part)
    this.#lineBytes += part.byteLength
    if (this.#eventBytes + this.#lineBytes > this.maxEventBytes) throw this.tooLarge()
  }

  #endLine(events: SseEvent[]): void {
    let line = concat(this.#line, this.#lineBytes)
    this.#line = []
    this.#eventBytes += this.#lineBytes + 1
    this.#lineBytes = 0
    if (this.#first) {
      this.#first = false
      if (line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) line = line.subarray(3)
    }
    if (line.byteLength === 0) {
      this.#dispatch(events)
      return
    }
    if (line[0] === COLON) return // a comment (the relay's keep-alive)
    let colon = line.indexOf(COLON)
    if (colon < 0) colon = line.byteLength
    const field = decoder.decode(line.subarray(0, colon))
    let value = line.subarray(colon + 1)
    if (value[0] === SPACE) value = value.subarray(1)
    if (field === 'data') this.#data.push(value)
    else if (field === 'event') this.#event = decoder.decode(value)
    else if (field === 'id') {
      const id = decoder.decode(value)
      if (!id.includes('\0')) this.#id = id
    }
    // `retry` and unknown fields are ignored: reconnecting is the client's own backoff.
  }

  #dispatch(events: SseEvent[]): void {
    if (this.#data.length > 0) {
      // Data lines are joined with LF.
      const data = concat(this.#data.flatMap((d, i) => (i > 0 ? [Uint8Array.of(LF), d] : [d])))
      const event: SseEvent = { data }
      if (this.#id !== undefined) event.id = this.#id
      if (this.#event !== undefined && this.#event !== '') event.event = this.#event
      events.push(event)
    }
    this.#data = []
    this.#id = undefined
    this.#event = undefined
    this.#eventBytes = 0
  }
}
