/**
 * Runs pending deliveries through their attempts to an outcome on the PROFILE §6 schedule:
 * one attempt in flight per delivery, the retry state stored after every failed attempt, the
 * entry removed from the outbox before the outcome is told.
 */
import type { DeliveryEvent } from '@agentmsg/core'
import { type AttemptResult, attemptDelivery } from './attempt.js'
import type { Clock } from './clock.js'
import type { Emitter } from './emitter.js'
import type { Job } from './job.js'
import type { Outbox } from './outbox.js'
import {
  failedOutcome,
  type Refusal,
  refusalOf,
  retryableError,
  undeliverableOutcome,
} from './outcomes.js'
import { nextAttemptAt } from './retry.js'
import type { RetryEvent, SenderEvents } from './sender-types.js'

/** What the runner works with. */
export interface DeliveriesConfig {
  outbox: Outbox
  fetch: typeof fetch
  clock: Clock
  attemptTimeoutMs: number
  deadlineMs: number
  random: () => number
  events: Emitter<SenderEvents>
  /** The outcome of a detached delivery. */
  later: ((event: DeliveryEvent) => void) | undefined
}

export class Deliveries {
  /** Deliveries being run, by outbox entry id. */
  readonly jobs = new Map<string, Job>()
  readonly #c: DeliveriesConfig
  /** Retries stop this long after the first attempt. */
  readonly deadlineMs: number
  /** Storage writes not finished yet, of every job (also settled ones), for stop() to await. */
  readonly #writes = new Set<Promise<void>>()
  #stopped = false

  constructor(config: DeliveriesConfig) {
    this.#c = config
    this.deadlineMs = config.deadlineMs
  }

  /** Start an attempt unless one is in flight: one message is never attempted twice at once. */
  run(job: Job): void {
    if (job.settled || this.#stopped || job.inFlight) return
    job.inFlight = true
    const running = this.#attempt(job).finally(() => {
      job.inFlight = false
      if (job.running === running) job.running = undefined
    })
    job.running = running
  }

  schedule(job: Job, delayMs: number): void {
    this.#clearTimer(job)
    job.hasTimer = true
    job.timer = this.#c.clock.setTimeout(() => {
      job.hasTimer = false
      this.run(job)
    }, delayMs)
  }

  /** Stop a delivery and remove it from the outbox; its promise rejects with `reason`. */
  async cancel(job: Job, reason: unknown): Promise<void> {
    if (job.settled) return
    job.settled = true
    this.#clearTimer(job)
    job.controller?.abort()
    this.jobs.delete(job.entry.id)
    job.reject(reason)
    job.resolveFirst({ kind: 'settled' })
    await this.#persist(job, () => this.#c.outbox.remove(job.entry.id))
  }

  /** End a delivery with a refusal: never retried. */
  async fail(job: Job, refusal: Refusal): Promise<void> {
    await this.#settle(job)
    const { event, error, later } = failedOutcome(job.entry, refusal)
    this.#c.events.emit('failed', event)
    this.#end(job, later, () => job.reject(error))
  }

  /** End a delivery whose time ran out. */
  async undeliverable(job: Job, reason: string): Promise<void> {
    await this.#settle(job)
    const { event, error, later } = undeliverableOutcome(job.entry, reason)
    this.#c.events.emit('undeliverable', event)
    this.#end(job, later, () => job.reject(error))
  }

  /**
   * Stop timers and abort attempts in flight (they do not count), then wait until nothing
   * writes to storage. Resolves with the deliveries that did not end; they stay stored.
   */
  async stop(): Promise<Job[]> {
    this.#stopped = true
    for (const job of this.jobs.values()) {
      this.#clearTimer(job)
      job.controller?.abort()
    }
    const jobs = [...this.jobs.values()]
    await Promise.allSettled(jobs.map((j) => j.running))
    await Promise.allSettled([...this.#writes])
    this.jobs.clear()
    return jobs.filter((j) => !j.settled)
  }

  async #attempt(job: Job): Promise<void> {
    const { entry } = job
    const attempt = entry.attempts + 1
    const controller = new AbortController()
    job.controller = controller
    let result: AttemptResult
    try {
      result = await attemptDelivery({
        url: entry.target.urls[0]!,
        body: job.body,
        messageId: entry.message.message_id,
        fetch: this.#c.fetch,
        timeoutMs: this.#c.attemptTimeoutMs,
        clock: this.#c.clock,
        signal: controller.signal,
      })
    } catch {
      // Stopped or cancelled: this attempt does not count.
      return
    } finally {
      job.controller = undefined
    }
    if (job.settled) return
    const { outcome, peer, cause } = result
    entry.attempts = attempt
    // From here on the attempt is over: a timer set below (or a listener) may start the next.
    job.inFlight = false

    if (outcome.kind === 'delivered') return this.#delivered(job, outcome.status)
    if (outcome.kind === 'fail') return this.fail(job, refusalOf(outcome, peer, cause))
    const now = this.#c.clock.now()
    const next = nextAttemptAt(
      outcome,
      { attempts: attempt, firstAttempt: entry.firstAttempt, now },
      { deadlineMs: this.#c.deadlineMs, random: this.#c.random },
    )
    entry.lastError = outcome.reason
    if (!next.retry) return this.undeliverable(job, next.reason)
    entry.nextAttempt = next.at
    const state = { attempts: attempt, nextAttempt: next.at, lastError: outcome.reason }
    await this.#persist(job, () => this.#c.outbox.update(entry.id, state))
    if (job.settled) return
    // Stopping: the state is stored; the next sender on this storage schedules it.
    if (!this.#stopped) this.schedule(job, next.delayMs)
    const event: RetryEvent = {
      ...{ message_id: entry.message.message_id, target: entry.target, attempt },
      ...{ delayMs: next.delayMs, nextAttempt: next.at, reason: outcome.reason },
    }
    if (outcome.status !== undefined) event.status = outcome.status
    this.#c.events.emit('retry', event)
    job.resolveFirst({ kind: 'retry', error: retryableError(entry, outcome, cause) })
  }

  async #delivered(job: Job, status: number): Promise<void> {
    await this.#settle(job)
    const { target, attempts, message } = job.entry
    const messageId = message.message_id
    this.#c.events.emit('delivered', { message_id: messageId, target, attempts, status })
    const receipt = { messageId, target, url: target.urls[0]! }
    this.#end(job, { type: 'delivered', messageId, target }, () => job.resolve(receipt))
  }

  /** Tell the outcome: to the caller's promise, and to the later-outcome hook when detached. */
  #end(job: Job, later: DeliveryEvent, settle: () => void): void {
    settle()
    if (job.detached) {
      try {
        this.#c.later?.(later)
      } catch (error) {
        this.#c.events.emit('error', { message_id: later.messageId, error })
      }
    }
    job.resolveFirst({ kind: 'settled' })
  }

  async #settle(job: Job): Promise<void> {
    job.settled = true
    this.#clearTimer(job)
    this.jobs.delete(job.entry.id)
    await this.#persist(job, () => this.#c.outbox.remove(job.entry.id))
  }

  #clearTimer(job: Job): void {
    if (job.hasTimer) this.#c.clock.clearTimeout(job.timer)
    job.hasTimer = false
  }

  /** Queue a storage write after the job's earlier ones; failures become 'error' events. */
  #persist(job: Job, write: () => Promise<void>): Promise<void> {
    const chain = job.chain.then(write).catch((error: unknown) => {
      this.#c.events.emit('error', { message_id: job.entry.message.message_id, error })
    })
    job.chain = chain
    this.#writes.add(chain)
    void chain.then(() => this.#writes.delete(chain))
    return chain
  }
}
