/**
 * The agent's durable outbox (PROFILE §6 retries). A durable send is stored with its copies
 * before the first attempt; when a durable target failed for now, it is tried again on PROFILE
 * §6's schedule until a target takes it, a peer refuses it, or 24 h have passed. Storage:
 * `outbox/<URI-encoded id>/m` (copies and targets, written once) and `…/s` (attempts, …).
 */
import {
  type DeliveryTarget,
  isAgentMsgError,
  type JsonValue,
  type Message,
  PROFILE,
  type Storage,
} from '@agentmsg/core'
import { backoffDelay } from '@agentmsg/core/http'
import type { Round } from './route.js'

/** A send kept for retries: its copies, and where each goes, in the order to try. */
export interface OutboxEntry {
  id: string
  /** Each target, the `protocol` of the transport that sends to it, and its copy's index. */
  targets: Array<{ target: DeliveryTarget; protocol: string; copy: number }>
  copies: Message[]
  firstAttempt: number
  attempts: number
  nextAttempt: number
  lastError?: string
}

/** The time of the schedule: tests replace it to cover 24 h at once. */
export interface Clock {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/** A later outcome of an entry: a target took it, or it is given up (refused, out of time). */
export type Outcome =
  | { type: 'delivered'; round: Extract<Round, { ok: true }> }
  | { type: 'undeliverable'; reason: string; error: unknown }

/** `deliver`: one round over the entry's targets; `onOutcome`: after its send resolved pending. */
export interface OutboxOptions {
  storage: Storage
  deliver(entry: OutboxEntry, signal?: AbortSignal): Promise<Round>
  onOutcome(entry: OutboxEntry, outcome: Outcome): void
  clock?: Clock
  /** For the backoff's jitter. @default Math.random */
  random?: () => number
}

const PREFIX = 'outbox/'

/** When to try again after `attempts` rounds, or why not (PROFILE §6). */
export function nextAttempt(
  state: { attempts: number; firstAttempt: number; now: number },
  retryAfterMs: number | undefined,
  random?: () => number,
): { at: number } | { reason: string } {
  const deadline = state.firstAttempt + PROFILE.retryDeadlineMs
  if (state.now >= deadline) {
    return { reason: `past the delivery deadline (24 h, ${state.attempts} attempts)` }
  }
  // Retry-After is the receiver's permission: never shortened, so it may not pass the deadline.
  if (retryAfterMs !== undefined && state.now + retryAfterMs > deadline) {
    return { reason: 'its Retry-After points past the delivery deadline (24 h)' }
  }
  const backoff = backoffDelay(state.attempts, { random })
  return { at: Math.min(state.now + Math.max(backoff, retryAfterMs ?? 0), deadline) }
}

export class Outbox {
  readonly #o: OutboxOptions
  readonly #clock: Clock
  readonly #timers = new Map<string, unknown>()
  /** Entries in a round now: one round per entry at a time. */
  readonly #running = new Map<string, Promise<unknown>>()
  #closed = false

  constructor(options: OutboxOptions) {
    this.#o = options
    this.#clock = options.clock ?? systemClock
  }

  /**
   * Store `entry`, then run its first round: resolves with it, or `pending` when the entry stays
   * for later rounds. A refused or failed entry is removed. Aborting `signal` during the round
   * removes it too. The same id sent again while its first round runs joins it.
   */
  send(entry: OutboxEntry, signal?: AbortSignal): Promise<Round | { pending: true }> {
    const running = this.#running.get(entry.id)
    if (running) return running.then((r) => (r as Round | undefined) ?? { pending: true })
    const run = (async () => {
      if (this.#closed) throw new TypeError('send: this agent is closed')
      await this.#o.storage.batch([
        { type: 'put', key: key(entry.id, 'm'), value: stored(entry) },
        { type: 'put', key: key(entry.id, 's'), value: state(entry) },
      ])
      let round: Round
      try {
        round = await this.#o.deliver(entry, signal)
      } catch (error) {
        await this.#remove(entry.id)
        throw error
      }
      return 'at' in (await this.#after(entry, round)) ? ({ pending: true } as const) : round
    })()
    return this.#track(entry.id, run)
  }

  /** Schedule every stored entry (at start: what an earlier run left). Returns how many. */
  async resume(): Promise<number> {
    const entries = await this.list()
    for (const e of entries) {
      if (!this.#running.has(e.id) && !this.#timers.has(e.id)) this.#schedule(e, e.nextAttempt)
    }
    return entries.length
  }

  /** The stored entries; records that cannot be read are skipped. */
  async list(): Promise<OutboxEntry[]> {
    const parts = new Map<string, { m?: Partial<OutboxEntry>; s?: Partial<OutboxEntry> }>()
    for (const [k, value] of await this.#o.storage.list(PREFIX)) {
      const [id, part] = k.slice(PREFIX.length).split('/')
      if (!id || (part !== 'm' && part !== 's') || typeof value !== 'object' || !value) continue
      parts.set(id, { ...parts.get(id), [part]: value })
    }
    const out: OutboxEntry[] = []
    for (const { m, s = {} } of parts.values()) {
      if (!m || !readable(m)) continue
      const { id, targets, copies, firstAttempt } = m as OutboxEntry
      const { attempts = 0, nextAttempt = firstAttempt, lastError } = s
      out.push({ id, targets, copies, firstAttempt, attempts, nextAttempt, lastError })
    }
    return out
  }

  /** Stop the timers; stored entries stay for the next run. */
  close(): void {
    this.#closed = true
    for (const handle of this.#timers.values()) this.#clock.clearTimeout(handle)
    this.#timers.clear()
  }

  /** After a round: scheduled `at` a time, or removed (and why, when time ran out). */
  async #after(entry: OutboxEntry, round: Round): Promise<{ at: number } | { reason?: string }> {
    if (round.ok || !round.retry) {
      await this.#remove(entry.id)
      return {}
    }
    const attempts = entry.attempts + 1
    const now = this.#clock.now()
    const next = nextAttempt(
      { attempts, firstAttempt: entry.firstAttempt, now },
      round.retryAfterMs,
      this.#o.random,
    )
    if ('reason' in next) {
      await this.#remove(entry.id)
      return next
    }
    const updated = { ...entry, attempts, nextAttempt: next.at, lastError: describe(round.error) }
    await this.#o.storage.put(key(entry.id, 's'), state(updated))
    this.#schedule(updated, next.at)
    return next
  }

  #schedule(entry: OutboxEntry, at: number): void {
    if (this.#closed) return
    const handle = this.#clock.setTimeout(
      () => {
        this.#timers.delete(entry.id)
        void this.#track(entry.id, this.#round(entry)).catch(() => undefined)
      },
      Math.max(0, at - this.#clock.now()),
    )
    this.#timers.set(entry.id, handle)
  }

  /** A later round: its outcome goes to `onOutcome`. */
  async #round(entry: OutboxEntry): Promise<void> {
    const round = await this.#o
      .deliver(entry)
      .catch((error: unknown): Round => ({ ok: false, error, retry: true }))
    const after = await this.#after(entry, round)
    if ('at' in after) return
    if (round.ok) return this.#o.onOutcome(entry, { type: 'delivered', round })
    const last = describe(round.error)
    const reason = after.reason ? `${after.reason}; last: ${last}` : last
    this.#o.onOutcome(entry, { type: 'undeliverable', reason, error: round.error })
  }

  #track<T>(id: string, run: Promise<T>): Promise<T> {
    this.#running.set(id, run)
    const done = () => {
      if (this.#running.get(id) === run) this.#running.delete(id)
    }
    run.then(done, done)
    return run
  }

  #remove(id: string): Promise<void> {
    return this.#o.storage.batch(['m', 's'].map((p) => ({ type: 'delete', key: key(id, p) })))
  }
}

const key = (id: string, part: string) => `${PREFIX}${encodeURIComponent(id)}/${part}`

/** What is written once: the copies and targets (targets as plain JSON: no undefined members). */
function stored(e: OutboxEntry): JsonValue {
  const targets = JSON.parse(JSON.stringify(e.targets)) as JsonValue
  const copies = e.copies as unknown as JsonValue
  return { id: e.id, targets, copies, firstAttempt: e.firstAttempt }
}

const state = ({ attempts, nextAttempt, lastError }: OutboxEntry): JsonValue =>
  lastError === undefined ? { attempts, nextAttempt } : { attempts, nextAttempt, lastError }

/** Whether a stored record has the shape `deliver` relies on. */
function readable({ id, copies, targets }: Partial<OutboxEntry>): boolean {
  if (typeof id !== 'string' || !Array.isArray(copies) || !Array.isArray(targets)) return false
  return targets.every(
    (t) =>
      typeof t?.protocol === 'string' &&
      typeof copies[t.copy] === 'object' &&
      typeof t.target?.agent === 'string' &&
      Array.isArray(t.target.urls) &&
      t.target.urls.every((u) => typeof u === 'string'),
  )
}

const describe = (error: unknown): string =>
  isAgentMsgError(error) || error instanceof Error ? error.message : String(error)
