/** The public shape of the durable https sender: options, events and the sender itself. */
import type {
  AbortOptions,
  DeliveryReceipt,
  DeliveryTarget,
  Message,
  Storage,
} from '@agentmsg/core'
import type { Clock } from './clock.js'
import type { OutboxEntry } from './outbox.js'

/** Options of `createSender`. */
export interface SenderOptions {
  /**
   * Where pending deliveries live (under `prefix`). Only a persistent adapter (fs, IndexedDB)
   * lets deliveries survive a restart; the default keeps them in memory. Run one sender per
   * storage and prefix at a time.
   * @default memoryStorage()
   */
  storage?: Storage
  /** Key prefix of the outbox in `storage`. @default 'outbox/' */
  prefix?: string
  /**
   * The fetch that makes each attempt. On Node, pass `createNodeFetch()` from
   * `@agentmsg/transport-https/node`: it applies the outbound address rules (PROFILE §4) to inbox
   * URLs taken from identity documents, and trusts a development certificate by `ca`.
   * @default globalThis.fetch
   */
  fetch?: typeof fetch
  /** The schedule's time source; tests pass `createManualClock()`. @default systemClock */
  clock?: Clock
  /** Timeout of one attempt, in real time. @default 30_000 */
  attemptTimeoutMs?: number
  /** Retries stop this long after the first attempt. @default 86_400_000 (24 h) */
  deadlineMs?: number
  /** Largest `JCS(message without trace)` sent, in bytes. @default 1_048_576 (1 MiB) */
  maxMessageBytes?: number
  /** Jitter source, returning [0, 1). @default Math.random */
  random?: () => number
  /**
   * Load pending deliveries from `storage` and schedule them as the sender is created. With
   * `false`, call {@link HttpsSender.resume} yourself (e.g. after attaching listeners late).
   * @default true
   */
  resume?: boolean
}

/** Emitted when the peer answered 2xx; the entry is gone from the outbox. */
export interface OutboxDeliveredEvent {
  message_id: string
  target: DeliveryTarget
  attempts: number
  status: number
}

/** Emitted when an attempt failed and another one is scheduled. */
export interface RetryEvent {
  message_id: string
  target: DeliveryTarget
  /** The attempt that failed (1 = the first). */
  attempt: number
  /** Time until the next attempt, on the sender's clock. */
  delayMs: number
  /** When the next attempt is due (ms since the epoch, sender's clock). */
  nextAttempt: number
  /** E.g. `status 500`, `network error: …`, `timeout: …`, `status 429 with Retry-After: 7`. */
  reason: string
  /** The answer's status, when there was an answer. */
  status?: number
}

/** Emitted when the peer refused the message (non-retryable); it is never retried. */
export interface FailedEvent {
  message_id: string
  target: DeliveryTarget
  /** The answer's status; absent when no request was answered (e.g. a refused address). */
  status?: number
  /** The peer's error code when it sent one (any string), else ours for the status. */
  code: string
  /** The peer's error message when it sent one, else a description. */
  message: string
  attempts: number
}

/** Emitted when retries ran out (the 24 h deadline); tell the human (SPEC §8). */
export interface OutboxUndeliverableEvent {
  message_id: string
  target: DeliveryTarget
  reason: string
  attempts: number
  firstAttempt: number
}

/** Emitted when the outbox storage failed; delivery goes on from memory. */
export interface SenderErrorEvent {
  message_id: string
  error: unknown
}

/** Event name → payload. */
export interface SenderEvents {
  delivered: OutboxDeliveredEvent
  retry: RetryEvent
  failed: FailedEvent
  undeliverable: OutboxUndeliverableEvent
  error: SenderErrorEvent
}

/**
 * The durable https sender: an outbox and the PROFILE §6 retry schedule. `httpsTransport()`
 * wraps it as a core `Transport`; use it directly when a promise that settles with the final
 * outcome (after retries) is what you want.
 */
export interface HttpsSender {
  readonly protocol: 'https'
  /**
   * Deliver a signed message to an inbox target (`{kind: 'inbox', agent, urls: [inboxUrl]}`).
   * Resolves on 2xx (after the outbox entry is removed); rejects with a `DeliveryError` when
   * refused (4xx), undeliverable (24 h) or when the sender closes first. Throws before storing
   * anything for a non-`https:` target, an invalid message, or one over `maxMessageBytes`
   * (`payload_too_large`). Aborting `signal` cancels the delivery and removes it from the
   * outbox. Sending a message again to the same target while it is pending joins the pending
   * delivery.
   */
  send(message: Message, target: DeliveryTarget, options?: AbortOptions): Promise<DeliveryReceipt>
  /** Subscribe; returns the unsubscribe function. Listener errors are rethrown asynchronously. */
  on<K extends keyof SenderEvents>(event: K, listener: (event: SenderEvents[K]) => void): () => void
  off<K extends keyof SenderEvents>(event: K, listener: (event: SenderEvents[K]) => void): void
  /**
   * Schedule pending deliveries found in storage that this sender does not track yet (those
   * due run at once); resolves with how many were picked up. Outcomes arrive as events. Runs
   * automatically on creation unless `resume: false`; calling it while it runs joins that run.
   */
  resume(): Promise<number>
  /** Entries waiting in the outbox. */
  pending(): Promise<OutboxEntry[]>
  /**
   * Stop timers and abort attempts in flight (they do not count), wait until nothing writes
   * to storage, and reject pending `send` promises with `closed`. Entries stay in storage for
   * the next sender. The storage itself is not closed.
   */
  close(): Promise<void>
}
