/**
 * The durable https sender (SPEC §4.1, PROFILE §6): every pending delivery is kept in the
 * outbox and attempted on the PROFILE §6 schedule — network errors and 5xx retried with
 * full-jitter backoff for 24 h, `Retry-After` honoured on 429/503, other 4xx never retried — so a
 * new sender on the same storage picks up where the last one stopped.
 */
import {
  type AbortOptions,
  type DeliveryEvent,
  type DeliveryReceipt,
  type DeliveryTarget,
  isAgentMsgError,
  type Message,
  memoryStorage,
  validateMessage,
} from '@agentmsg/core'
import { type Clock, systemClock } from './clock.js'
import { Deliveries } from './deliveries.js'
import { DeliveryError } from './delivery-error.js'
import { Emitter } from './emitter.js'
import { checkInboxTarget, encodeForInbox } from './inbox-target.js'
import { type FirstAttempt, type Job, newJob } from './job.js'
import { Outbox, type OutboxEntry } from './outbox.js'
import { DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_DEADLINE_MS } from './retry.js'
import type { HttpsSender, SenderEvents, SenderOptions } from './sender-types.js'

/** Largest delay a timer takes (2^31 − 1 ms); ky refuses longer attempt timeouts. */
const MAX_TIMEOUT_MS = 2_147_483_647

/** A queued delivery, as `httpsTransport` drives it. */
export interface QueuedDelivery {
  /** How the first attempt went (already over when this send joined a pending delivery). */
  readonly first: Promise<FirstAttempt>
  /** Settles with the final outcome. */
  readonly done: Promise<DeliveryReceipt>
  /** This send joined a delivery that was already pending. */
  readonly joined: boolean
  /**
   * Stop the delivery and remove it from the outbox; `done` rejects with `reason`. A delivery
   * someone detached (a durable send that joined it) goes on.
   */
  cancel(reason: unknown): Promise<void>
  /**
   * Nobody waits on `done` any more: report the outcome to `onLaterOutcome`. `false` when the
   * delivery had already ended (another send of it cancelled it).
   */
  detach(): boolean
}

/** Hooks of the transport that drives a {@link Sender}. */
export interface SenderHooks {
  /** The outcome of a detached delivery (resumed from storage, or a durable send gone pending). */
  onLaterOutcome?(event: DeliveryEvent): void
}

/**
 * A sender for direct HTTPS delivery with a durable outbox.
 *
 * @example
 * import { createNodeFetch, createSender } from '@agentmsg/transport-https/node'
 * const sender = createSender({ storage: await fsStorage({ dir }), fetch: createNodeFetch() })
 * sender.on('undeliverable', (e) => notifyHuman(e.message_id, e.reason))
 * const target = { kind: 'inbox', agent: bob, urls: ['https://bob.example/.well-known/agentmsg/inbox'] }
 * await sender.send(signed, target)
 */
export function createSender(options: SenderOptions = {}): HttpsSender {
  return new Sender(options)
}

export class Sender implements HttpsSender {
  readonly protocol = 'https' as const
  readonly #outbox: Outbox
  readonly #clock: Clock
  readonly #maxBytes: number
  readonly #events = new Emitter<SenderEvents>()
  readonly #runner: Deliveries
  #resuming: Promise<number> | undefined
  #closed = false
  #closing: Promise<void> | undefined

  constructor(o: SenderOptions, hooks: SenderHooks = {}) {
    this.#outbox = new Outbox(o.storage ?? memoryStorage(), o.prefix ? { prefix: o.prefix } : {})
    this.#clock = o.clock ?? systemClock
    const attemptTimeoutMs = positive(
      o.attemptTimeoutMs,
      DEFAULT_ATTEMPT_TIMEOUT_MS,
      'attemptTimeoutMs',
    )
    if (attemptTimeoutMs > MAX_TIMEOUT_MS) throw new RangeError('attemptTimeoutMs is too large')
    this.#maxBytes = positive(o.maxMessageBytes, 1_048_576, 'maxMessageBytes')
    this.#runner = new Deliveries({
      outbox: this.#outbox,
      fetch: o.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      clock: this.#clock,
      attemptTimeoutMs,
      deadlineMs: positive(o.deadlineMs, DEFAULT_DEADLINE_MS, 'deadlineMs'),
      random: o.random ?? Math.random,
      events: this.#events,
      later: hooks.onLaterOutcome?.bind(hooks),
    })
    if (o.resume !== false) {
      this.resume().catch((error: unknown) => this.#events.emit('error', { message_id: '', error }))
    }
  }

  async send(message: Message, target: DeliveryTarget, options: AbortOptions = {}) {
    const { signal } = options
    signal?.throwIfAborted()
    const job = await this.#enqueue(message, target)
    return this.#wait(job, signal)
  }

  /** Queue a delivery (stored before its first attempt) and hand back its handle. */
  async enqueue(message: Message, target: DeliveryTarget): Promise<QueuedDelivery> {
    const joined = this.#runner.jobs.has(idOf(message, target))
    const job = await this.#enqueue(message, target)
    return {
      first: job.first,
      done: job.promise,
      joined,
      cancel: (reason) => (job.detached ? Promise.resolve() : this.#runner.cancel(job, reason)),
      detach: () => {
        job.detached = true
        return !job.settled
      },
    }
  }

  async #enqueue(message: Message, target: DeliveryTarget): Promise<Job> {
    if (this.#closed) throw new TypeError('send: this sender is closed')
    const url = checkInboxTarget(target)
    const { message: valid } = validateMessage(message)
    const body = encodeForInbox(valid, this.#maxBytes)
    const stored: DeliveryTarget = { kind: 'inbox', agent: target.agent, urls: [url] }
    const id = Outbox.entryId(valid.message_id, stored)
    const pending = this.#runner.jobs.get(id)
    if (pending) return pending
    const now = this.#clock.now()
    // A copy of what is sent, so changing the caller's object later changes nothing.
    const copy = JSON.parse(body) as Message
    const entry: OutboxEntry = {
      ...{ id, message: copy, target: stored, firstAttempt: now },
      ...{ attempts: 0, nextAttempt: now, lastError: null },
    }
    const job = newJob(entry, body, false)
    // Tracked before the first await, so a second send of the same message joins this one.
    this.#runner.jobs.set(id, job)
    // Stored before the first attempt: a crash right after send() loses nothing.
    try {
      await this.#outbox.add(job.entry)
    } catch (error) {
      this.#runner.jobs.delete(id)
      job.settled = true
      job.reject(error)
      job.resolveFirst({ kind: 'settled' })
      throw error
    }
    if (!job.settled) this.#runner.run(job)
    return job
  }

  on<K extends keyof SenderEvents>(event: K, listener: (event: SenderEvents[K]) => void) {
    return this.#events.on(event, listener)
  }

  off<K extends keyof SenderEvents>(event: K, listener: (event: SenderEvents[K]) => void) {
    this.#events.off(event, listener)
  }

  resume(): Promise<number> {
    if (this.#closed) return Promise.resolve(0)
    this.#resuming ??= this.#resume().finally(() => {
      this.#resuming = undefined
    })
    return this.#resuming
  }

  pending(): Promise<OutboxEntry[]> {
    return this.#outbox.list()
  }

  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    this.#closed = true
    const stopping = this.#runner.stop()
    await this.#resuming?.catch(() => {})
    for (const job of await stopping) {
      job.settled = true
      const { entry } = job
      const id = entry.message.message_id
      job.reject(
        new DeliveryError(
          'closed',
          'unavailable',
          `the sender closed before ${id} was delivered; it stays in the outbox for the next sender on this storage`,
          { messageId: id, target: entry.target, attempts: entry.attempts },
        ),
      )
      job.resolveFirst({ kind: 'settled' })
    }
  }

  async #resume(): Promise<number> {
    const runner = this.#runner
    let picked = 0
    for (const entry of await this.#outbox.list()) {
      if (this.#closed) break
      if (runner.jobs.has(entry.id) || entry.target.kind !== 'inbox') continue
      let body: string
      try {
        checkInboxTarget(entry.target)
        body = encodeForInbox(validateMessage(entry.message).message, this.#maxBytes)
      } catch (error) {
        // Stored by something else, or limits changed: it can never be sent.
        const job = newJob(entry, '', true)
        runner.jobs.set(entry.id, job)
        const code = isAgentMsgError(error) ? error.code : 'invalid_format'
        await runner.fail(job, { code, message: describe(error), cause: error })
        continue
      }
      const job = newJob(entry, body, true)
      runner.jobs.set(entry.id, job)
      picked++
      const now = this.#clock.now()
      if (now > entry.firstAttempt + runner.deadlineMs) {
        const reason = `the delivery deadline passed while no sender was running (after ${entry.attempts} attempts; last: ${entry.lastError ?? 'none'})`
        await runner.undeliverable(job, reason)
      } else if (entry.nextAttempt <= now) runner.run(job)
      else runner.schedule(job, entry.nextAttempt - now)
    }
    return picked
  }

  #wait(job: Job, signal: AbortSignal | undefined): Promise<DeliveryReceipt> {
    if (!signal) return job.promise
    const onAbort = () => void this.#runner.cancel(job, signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    const cleanup = () => signal.removeEventListener('abort', onAbort)
    job.promise.then(cleanup, cleanup)
    return job.promise
  }
}

/** The outbox id a send of `message` to `target` would have (for telling a joined send). */
function idOf(message: Message, target: DeliveryTarget): string {
  const url = Array.isArray(target?.urls) ? target.urls[0] : undefined
  const id = (message as { message_id?: unknown })?.message_id
  if (typeof url !== 'string' || typeof id !== 'string') return ''
  return Outbox.entryId(id, { kind: 'inbox', agent: target.agent, urls: [url] })
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback
  if (!(Number.isFinite(value) && value > 0))
    throw new RangeError(`${name} must be a positive number`)
  return value
}
