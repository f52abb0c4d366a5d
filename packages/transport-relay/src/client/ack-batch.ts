/**
 * Batched acknowledgements (PROFILE §9 `POST /relay/ack`): a client that receives faster than
 * one round trip per message acknowledges in batches of up to 500, one batch in flight at a
 * time, so delivery is not paced by acknowledgements. The first entry goes at once (or after
 * `lingerMs`, see {@link AckBatcher}); those handled while a batch is in flight make up the next
 * one.
 */

import { isAgentMsgError } from '@agentmsg/core'
import { isAgentId } from '@agentmsg/core/http'
import { reconnectDelay, sleep } from './backoff.js'

/** One entry to acknowledge: its `message_id` and `from.agent`. */
export interface AckEntry {
  messageId: string
  from: string
}

/** Send one batch (1–500 entries). */
export type AckManyFn = (entries: AckEntry[]) => Promise<void>

/** Entries per `POST /relay/ack` (PROFILE §9: 1–500). */
export const MAX_ACK_BATCH = 500

/**
 * True when a `POST /relay/ack` batch can carry this entry: the relay refuses a whole batch
 * over one `from` that is not an agent id, so such an entry goes alone (`DELETE`).
 */
export function batchable(messageId: string, from: string): boolean {
  return messageId !== '' && isAgentId(from)
}

export class AckBatcher {
  readonly #send: AckManyFn
  readonly #report: (error: unknown) => void
  readonly #max: number
  readonly #lingerMs: number
  readonly #closing = new AbortController()
  #pending: AckEntry[] = []
  #inFlight: Promise<void> | undefined
  /** When the oldest pending entry was queued (Date.now). */
  #firstAt = 0
  #linger: ReturnType<typeof setTimeout> | undefined

  /**
   * @param send sends one batch
   * @param report a batch that failed for good: refused (a 4xx other than 429), or still failing
   *   at close. Its entries stay held at the relay until they expire or are acknowledged again
   *   (the receive pipeline answers a redelivery as a duplicate).
   * @param lingerMs an entry waits up to this long for others before a batch goes (a full batch
   *   goes at once, and so does everything at `flush()`): under a steady stream, batches then go
   *   at most every `lingerMs` rather than once per round trip, each a signed request the relay
   *   verifies. 0: at once.
   */
  constructor(
    send: AckManyFn,
    report: (error: unknown) => void,
    max = MAX_ACK_BATCH,
    lingerMs = 0,
  ) {
    this.#send = send
    this.#report = report
    this.#max = Math.max(1, Math.min(MAX_ACK_BATCH, Math.floor(max)))
    this.#lingerMs = Math.max(0, lingerMs)
  }

  /** Entries waiting for the next batch. */
  get pending(): number {
    return this.#pending.length
  }

  /**
   * Queue one entry. Resolves once it is queued: at once, unless a full batch already waits
   * behind the one in flight (then after that one is answered) — that bounds the queue, and
   * holds the stream back while the relay cannot take acknowledgements.
   */
  async add(entry: AckEntry): Promise<void> {
    while (this.#pending.length >= this.#max && this.#inFlight) await this.#inFlight
    if (this.#pending.length === 0) this.#firstAt = Date.now()
    this.#pending.push(entry)
    this.#pump()
  }

  /**
   * Send what is queued and resolve when every batch was answered or failed. Called at close:
   * from then on a failing batch is tried once more, not retried with backoff.
   */
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

  /** One batch, retried with backoff while the failure is one retrying can cure. */
  async #deliver(batch: AckEntry[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#send(batch)
        return
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
        await sleep(Math.max(wait, reconnectDelay(attempt)), this.#closing.signal)
      }
    }
  }
}
