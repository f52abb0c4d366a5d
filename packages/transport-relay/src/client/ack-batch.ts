/**
 * Batched acknowledgements (PROFILE §9 `POST /relay/ack`): up to 500 at once, one batch in
 * flight, so delivery is not paced by acknowledgements.
 */
import { isAgentMsgError, PROFILE, parseAgentId } from '@agentmsg/core'
import { Backoff, sleep } from '@agentmsg/core/http'
import { STREAM_BACKOFF } from './http.js'

/** One entry to acknowledge: its `message_id` and `from.agent`. */
export interface AckEntry {
  messageId: string
  from: string
}

/** Send one batch (1–500 entries). */
export type AckManyFn = (entries: AckEntry[]) => Promise<void>

/** The relay refuses a whole batch over one `from` that is not an agent id: such an entry goes alone. */
export function batchable(messageId: string, from: string): boolean {
  return messageId !== '' && isAgent(from)
}

/**
 * An entry's `ack()`: one at a time, a 404 is success (acked before, or expired), a failure may
 * be tried again. `pending`: the handler acknowledged it.
 */
export function entryAck(send: (() => Promise<void>) | undefined) {
  let pending: Promise<void> | undefined
  return {
    ack(): Promise<void> {
      if (!send) return Promise.resolve()
      pending ??= send().catch((e: unknown) => {
        if (isAgentMsgError(e) && e.code === 'not_found') return
        pending = undefined
        throw e
      })
      return pending
    },
    get pending() {
      return pending
    },
  }
}

export class AckBatcher {
  readonly #send: AckManyFn
  readonly #report: (error: unknown) => void
  readonly #max: number
  readonly #lingerMs: number
  readonly #closing = new AbortController()
  #pending: AckEntry[] = []
  #inFlight: Promise<void> | undefined
  /** When the oldest pending entry was queued. */
  #firstAt = 0
  #linger: ReturnType<typeof setTimeout> | undefined

  /**
   * @param report a batch that failed for good (its entries stay held; a resend is a duplicate)
   * @param lingerMs how long an entry waits for others (a full batch and `flush()` go at once)
   */
  constructor(
    send: AckManyFn,
    report: (error: unknown) => void,
    max: number = PROFILE.maxAcks,
    lingerMs = 0,
  ) {
    this.#send = send
    this.#report = report
    this.#max = Math.max(1, Math.min(PROFILE.maxAcks, Math.floor(max)))
    this.#lingerMs = Math.max(0, lingerMs)
  }

  get pending(): number {
    return this.#pending.length
  }

  /** Queue one entry; waits while a full batch is queued (holding the stream back). */
  async add(entry: AckEntry): Promise<void> {
    while (this.#pending.length >= this.#max && this.#inFlight) await this.#inFlight
    if (this.#pending.length === 0) this.#firstAt = Date.now()
    this.#pending.push(entry)
    this.#pump()
  }

  /** Send what is queued and wait for every batch; from now on a failure is not retried. */
  async flush(): Promise<void> {
    this.#closing.abort()
    this.#pump()
    while (this.#inFlight) await this.#inFlight
  }

  #pump(): void {
    if (this.#inFlight || this.#pending.length === 0) return
    const wait = this.#firstAt + this.#lingerMs - Date.now()
    if (wait > 0 && this.#pending.length < this.#max && !this.#closing.signal.aborted) {
      this.#linger ??= setTimeout(() => {
        this.#linger = undefined
        this.#pump()
      }, wait)
      return
    }
    clearTimeout(this.#linger)
    this.#linger = undefined
    const batch = this.#pending.splice(0, this.#max)
    // What stays is a full batch, or came later: it goes when this one is answered.
    this.#firstAt = Date.now()
    this.#inFlight = this.#deliver(batch).finally(() => {
      this.#inFlight = undefined
      this.#pump()
    })
  }

  /** One batch, retried with backoff while retrying can cure the failure. */
  async #deliver(batch: AckEntry[]): Promise<void> {
    const backoff = new Backoff(STREAM_BACKOFF)
    for (;;) {
      try {
        return await this.#send(batch)
      } catch (error) {
        const retry = !isAgentMsgError(error) || error.shouldRetry()
        if (!retry || this.#closing.signal.aborted) {
          try {
            this.#report(error)
          } catch {
            // a throwing reporter must not stop the batches behind this one
          }
          return
        }
        const wait = isAgentMsgError(error) ? (error.retryAfter ?? 0) * 1000 : 0
        await sleep(Math.max(wait, backoff.next()), this.#closing.signal)
      }
    }
  }
}

function isAgent(id: string): boolean {
  try {
    parseAgentId(id)
    return true
  } catch {
    return false
  }
}
