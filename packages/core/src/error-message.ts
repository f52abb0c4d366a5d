import { createMessage } from './create-message.js'
import type { ErrorPhaseCode } from './errors.js'
import type { Message, UnsignedMessage } from './types.js'

/** Options for {@link createErrorMessage}. */
export interface ErrorMessageOptions {
  /** The message being answered (it must have been verified). */
  original: Message
  /** The agent sending the error (us). */
  from: string
  code: ErrorPhaseCode
  /** Human-readable detail. */
  message: string
  /** Our next sequence number in this conversation. @default original.sequence + 1 */
  sequence?: number
  /** Relays where we can be reached. */
  relays?: string[]
  /** @default now */
  date?: number
}

/**
 * Build (unsigned) the error phase message of PROFILE §7 answering `original`: same
 * conversation, `content_type: application/json`, one data part `{code, message,
 * ref_message_id}`. Sign it like any message. Throws when `original` is itself an error
 * phase message — errors are never answered with errors (no loops). Rate limiting (one a
 * minute per peer) is {@link ErrorReplyGate}'s job.
 *
 * @example
 * const reply = createErrorMessage({ original, from: me, code: 'unknown_phase', message: '…' })
 */
export function createErrorMessage(o: ErrorMessageOptions): UnsignedMessage {
  if (o.original.phase === 'error') {
    throw new TypeError('an error phase message is never answered with another (PROFILE §7)')
  }
  return createMessage({
    from: o.from,
    to: o.original.from.agent,
    conversationId: o.original.conversation_id,
    sequence: o.sequence ?? o.original.sequence + 1,
    phase: 'error',
    contentType: 'application/json',
    parts: [
      {
        type: 'data',
        data: { code: o.code, message: o.message, ref_message_id: o.original.message_id },
      },
    ],
    ...(o.relays ? { relays: o.relays } : {}),
    ...(o.date !== undefined ? { date: o.date } : {}),
  })
}

/**
 * Decides whether an error phase message may be sent (PROFILE §7): only to verified senders,
 * never in reply to an error, at most one a minute per peer. Memory is bounded: entries older
 * than the interval are dropped as new ones come in.
 */
export class ErrorReplyGate {
  readonly #last = new Map<string, number>()
  readonly #interval: number
  readonly #now: () => number

  constructor(options: { intervalMs?: number; now?: () => number } = {}) {
    this.#interval = options.intervalMs ?? 60_000
    this.#now = options.now ?? Date.now
  }

  /** True (and the slot is taken) when an error reply to `original` may go out now. */
  allow(original: Message, verified: boolean): boolean {
    if (!verified || original.phase === 'error') return false
    const now = this.#now()
    const peer = original.from.agent
    const last = this.#last.get(peer)
    if (last !== undefined && now - last < this.#interval) return false
    this.#last.delete(peer)
    this.#last.set(peer, now)
    // Map iterates in insertion order: the oldest entries come first.
    for (const [k, t] of this.#last) {
      if (now - t < this.#interval) break
      this.#last.delete(k)
    }
    return true
  }
}
