/**
 * Batched acknowledgements (PROFILE §9 `POST /relay/ack`): a client that receives faster than
 * one round trip per message acknowledges in batches of up to 500, one batch in flight at a
 * time, so delivery is not paced by acknowledgements. The first entry goes at once; those
 * handled while a batch is in flight make up the next one.
 */

import { isAgentId, isAgentMsgError } from '@agentmsg/core'
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
  readonly #closing = new AbortController()
  #pending: AckEntry[] = []
  #inFlight: Promise<void> | undefined

  /**
   * @param send sends one batch
   * @param report a batch that failed for good: refused (a 4xx other than 429), or still failing
   *   at close. Its entries stay held at the relay until they expire or are acknowledged again
   *   (the receive pipeline answers a redelivery as a duplicate).
   */
  constructor(send: AckManyFn, report: (error: unknown) => void, max = MAX_ACK_BATCH) {
    this.#send = send
    this.#report = report
    this.#max = Math.max(1, Math.min(MAX_ACK_BATCH, Math.floor(max)))
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
    this.#pending.push(entry)
    this.#pump()
  }

  /**
   * Send what is queued and resolve when every batch was answered or failed. Called at close:
   * from then on a failing batch is tried once more, not retried with backoff.
   */
  async flush(): Promise<void> {
    this.#closing.abort()
    while (this.#inFlight) await this.#inFlight
  }

  #pump(): void {
    if (this.#inFlight || this.#pending.length === 0) return
    const batch = this.#pending.splice(0, this.#max)
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
