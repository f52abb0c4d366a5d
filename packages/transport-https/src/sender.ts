import ky from 'ky'
import {
  AgentMsgError,
  ERROR_STATUS,
  canonicalize,
  memoryStorage,
  utf8Encode,
  validateMessage,
  isAgentMsgError,
  type AbortOptions,
  type DeliveryReceipt,
  type DeliveryTarget,
  type ErrorCode,
  type Message,
  type Storage,
  type Transport,
} from '@agentmsg/core'
import { systemClock, type Clock } from './clock.js'
import { Outbox, type OutboxEntry } from './outbox.js'
import {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_DEADLINE_MS,
  classifyError,
  classifyResponse,
  nextAttemptAt,
  type AttemptOutcome,
} from './retry.js'

/** Options of {@link createSender}. */
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
export interface DeliveredEvent {
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
export interface UndeliverableEvent {
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
  delivered: DeliveredEvent
  retry: RetryEvent
  failed: FailedEvent
  undeliverable: UndeliverableEvent
  error: SenderErrorEvent
}

/**
 * Why {@link HttpsSender.send} rejected after the message was accepted for delivery.
 * `code` is a PROFILE §6 code: the peer's own when it is one, else one fitting the status
 * (`unavailable` for undeliverable and closed).
 */
export class DeliveryError extends AgentMsgError {
  /** `failed`: refused, never retried; `undeliverable`: deadline passed; `closed`: sender closed. */
  readonly outcome: 'failed' | 'undeliverable' | 'closed'
  readonly messageId: string
  readonly target: DeliveryTarget
  readonly attempts: number
  /** The status the peer answered, if it answered. */
  readonly peerStatus: number | undefined
  /** The `code` of the peer's error body, verbatim (may be outside PROFILE §6). */
  readonly peerCode: string | undefined

  constructor(
    outcome: DeliveryError['outcome'],
    code: ErrorCode,
    message: string,
    details: {
      messageId: string
      target: DeliveryTarget
      attempts: number
      peerStatus?: number
      peerCode?: string
      cause?: unknown
    },
  ) {
    super(code, message, details.cause === undefined ? {} : { cause: details.cause })
    this.outcome = outcome
    this.messageId = details.messageId
    this.target = details.target
    this.attempts = details.attempts
    this.peerStatus = details.peerStatus
    this.peerCode = details.peerCode
  }
}

/** The https {@link Transport} with its durable outbox. */
export interface HttpsSender extends Transport {
  readonly protocol: 'https'
  /**
   * Deliver a signed message to an inbox. Resolves on 2xx (after the outbox entry is removed);
   * rejects with a {@link DeliveryError} when refused (4xx), undeliverable (24 h) or when the
   * sender closes first. Throws before storing anything for a non-`https:` target, an invalid
   * message, or one over `maxMessageBytes` (`payload_too_large`). Aborting `signal` cancels the
   * delivery and removes it from the outbox. Sending a message again to the same target while it
   * is pending joins the pending delivery.
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

interface Job {
  entry: OutboxEntry
  body: string
  timer: unknown
  hasTimer: boolean
  /** An attempt is on the wire or its answer not yet classified. */
  inFlight: boolean
  /** The current attempt with its bookkeeping, for close() to wait on. */
  running: Promise<void> | undefined
  controller: AbortController | undefined
  settled: boolean
  /** Storage writes of this job, in order, so a late update cannot follow the removal. */
  chain: Promise<void>
  promise: Promise<DeliveryReceipt>
  resolve(receipt: DeliveryReceipt): void
  reject(error: unknown): void
}

/** Extra room for `trace` on top of the message limit, as the inbox allows (PROFILE §6). */
const TRACE_ALLOWANCE = 65_536
/** Largest delay a timer takes (2^31 − 1 ms). */
const MAX_TIMEOUT_MS = 2_147_483_647
/** Most bytes of an error body read. */
const ERROR_BODY_LIMIT = 16_384

/** Status → PROFILE §6 code, for peers that send no (known) code. */
const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'invalid_format',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
}

/**
 * A sender for direct HTTPS delivery (SPEC §4.1, PROFILE §6). Each attempt is one ky POST with
 * ky's own retries off (`retry: 0`: they live in memory on real timers); the durable schedule
 * above it retries network errors and 5xx with full-jitter backoff for 24 h, honours
 * `Retry-After` on 429/503, never retries other 4xx, and keeps every pending delivery in the
 * outbox so a new sender on the same storage picks it up.
 *
 * @example
 * import { createNodeFetch, createSender } from '@agentmsg/transport-https/node'
 * // Public inboxes: the default fetch options apply PROFILE §4's address rules.
 * const sender = createSender({ storage: fsStorage({ dir }), fetch: createNodeFetch() })
 * // Development on this machine: trust the dev certificate and allow loopback explicitly.
 * const devSender = createSender({
 *   fetch: createNodeFetch({ ca: devCert.cert, addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }) }),
 * })
 * sender.on('undeliverable', (e) => notifyHuman(e.message_id, e.reason))
 * await sender.send(signed, { kind: 'inbox', url: 'https://bob.example/.well-known/agentmsg/inbox' })
 */
export function createSender(options: SenderOptions = {}): HttpsSender {
  return new Sender(options)
}

class Sender implements HttpsSender {
  readonly protocol = 'https' as const
  readonly #outbox: Outbox
  readonly #fetch: typeof fetch
  readonly #clock: Clock
  readonly #attemptTimeoutMs: number
  readonly #deadlineMs: number
  readonly #maxBytes: number
  readonly #random: () => number
  readonly #jobs = new Map<string, Job>()
  readonly #listeners = new Map<keyof SenderEvents, Set<(event: never) => void>>()
  /** Storage writes not finished yet, of every job (also settled ones), for close() to await. */
  readonly #writes = new Set<Promise<void>>()
  #resuming: Promise<number> | undefined
  #closed = false
  #closing: Promise<void> | undefined

  constructor(o: SenderOptions) {
    this.#outbox = new Outbox(o.storage ?? memoryStorage(), o.prefix ? { prefix: o.prefix } : {})
    this.#fetch = o.fetch ?? ((input, init) => globalThis.fetch(input, init))
    this.#clock = o.clock ?? systemClock
    this.#attemptTimeoutMs = positive(
      o.attemptTimeoutMs,
      DEFAULT_ATTEMPT_TIMEOUT_MS,
      'attemptTimeoutMs',
    )
    this.#deadlineMs = positive(o.deadlineMs, DEFAULT_DEADLINE_MS, 'deadlineMs')
    this.#maxBytes = positive(o.maxMessageBytes, 1_048_576, 'maxMessageBytes')
    this.#random = o.random ?? Math.random
    // ky refuses timeouts that do not fit a timer.
    if (this.#attemptTimeoutMs > MAX_TIMEOUT_MS)
      throw new RangeError('attemptTimeoutMs is too large')
    if (o.resume !== false) {
      this.resume().catch((error: unknown) => this.#emit('error', { message_id: '', error }))
    }
  }

  async send(message: Message, target: DeliveryTarget, options: AbortOptions = {}) {
    const { signal } = options
    signal?.throwIfAborted()
    if (this.#closed) throw new TypeError('send: this sender is closed')
    const url = checkInboxTarget(target)
    const { message: valid } = validateMessage(message)
    const body = this.#encode(valid)
    const id = Outbox.entryId(valid.message_id, { kind: 'inbox', url })
    const pending = this.#jobs.get(id)
    if (pending) return this.#wait(pending, signal)

    const now = this.#clock.now()
    const job = newJob(
      {
        id,
        // A copy of what is sent, so changing the caller's object later changes nothing.
        message: JSON.parse(body) as Message,
        target: { kind: 'inbox', url },
        firstAttempt: now,
        attempts: 0,
        nextAttempt: now,
        lastError: null,
      },
      body,
    )
    // Tracked before the first await, so a second send of the same message joins this one.
    this.#jobs.set(id, job)
    // Stored before the first attempt: a crash right after send() loses nothing.
    try {
      await this.#outbox.add(job.entry)
    } catch (error) {
      this.#jobs.delete(id)
      job.settled = true
      job.reject(error)
      throw error
    }
    if (!job.settled) this.#run(job)
    return this.#wait(job, signal)
  }

  on<K extends keyof SenderEvents>(event: K, listener: (event: SenderEvents[K]) => void) {
    let set = this.#listeners.get(event)
    if (!set) this.#listeners.set(event, (set = new Set()))
    set.add(listener as (event: never) => void)
    return () => this.off(event, listener)
  }

  off<K extends keyof SenderEvents>(event: K, listener: (event: SenderEvents[K]) => void) {
    this.#listeners.get(event)?.delete(listener as (event: never) => void)
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
    for (const job of this.#jobs.values()) {
      this.#clearTimer(job)
      job.controller?.abort()
    }
    await this.#resuming?.catch(() => {})
    const jobs = [...this.#jobs.values()]
    await Promise.allSettled(jobs.map((j) => j.running))
    await Promise.allSettled([...this.#writes])
    for (const job of jobs) {
      if (job.settled) continue
      job.settled = true
      const { entry } = job
      job.reject(
        new DeliveryError(
          'closed',
          'unavailable',
          `the sender closed before ${entry.message.message_id} was delivered; it stays in the outbox for the next sender on this storage`,
          { messageId: entry.message.message_id, target: entry.target, attempts: entry.attempts },
        ),
      )
    }
    this.#jobs.clear()
  }

  async #resume(): Promise<number> {
    const entries = await this.#outbox.list()
    let picked = 0
    for (const entry of entries) {
      if (this.#closed) break
      if (this.#jobs.has(entry.id) || entry.target.kind !== 'inbox') continue
      let body: string
      try {
        checkInboxTarget(entry.target)
        body = this.#encode(validateMessage(entry.message).message)
      } catch (error) {
        // Stored by something else, or limits changed: it can never be sent.
        const job = newJob(entry, '')
        this.#jobs.set(entry.id, job)
        await this.#fail(job, undefined, errorCode(error), describe(error), error)
        continue
      }
      const job = newJob(entry, body)
      this.#jobs.set(entry.id, job)
      picked++
      const now = this.#clock.now()
      if (now > entry.firstAttempt + this.#deadlineMs) {
        const reason = `the delivery deadline passed while no sender was running (after ${entry.attempts} attempts; last: ${entry.lastError ?? 'none'})`
        await this.#undeliverable(job, reason)
      } else if (entry.nextAttempt <= now) {
        this.#run(job)
      } else {
        this.#schedule(job, entry.nextAttempt - now)
      }
    }
    return picked
  }

  /** The wire body; throws `payload_too_large` over the limits of PROFILE §6. */
  #encode(message: Message): string {
    const { trace: _trace, ...rest } = message
    const size = utf8Encode(canonicalize(rest)).length
    if (size > this.#maxBytes) {
      throw new AgentMsgError(
        'payload_too_large',
        `message ${message.message_id} is ${size} bytes (JCS without trace); senders refuse more than ${this.#maxBytes} (PROFILE §6)`,
      )
    }
    const body = canonicalize(message)
    const total = utf8Encode(body).length
    if (total > this.#maxBytes + TRACE_ALLOWANCE) {
      throw new AgentMsgError(
        'payload_too_large',
        `message ${message.message_id} is ${total} bytes with its trace; the inbox takes at most ${this.#maxBytes + TRACE_ALLOWANCE}`,
      )
    }
    return body
  }

  #wait(job: Job, signal: AbortSignal | undefined): Promise<DeliveryReceipt> {
    if (!signal) return job.promise
    const onAbort = () => void this.#cancel(job, signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    const cleanup = () => signal.removeEventListener('abort', onAbort)
    job.promise.then(cleanup, cleanup)
    return job.promise
  }

  async #cancel(job: Job, reason: unknown): Promise<void> {
    if (job.settled) return
    job.settled = true
    this.#clearTimer(job)
    job.controller?.abort()
    this.#jobs.delete(job.entry.id)
    job.reject(reason)
    await this.#persist(job, () => this.#outbox.remove(job.entry.id))
  }

  #schedule(job: Job, delayMs: number): void {
    this.#clearTimer(job)
    job.hasTimer = true
    job.timer = this.#clock.setTimeout(() => {
      job.hasTimer = false
      this.#run(job)
    }, delayMs)
  }

  #clearTimer(job: Job): void {
    if (job.hasTimer) this.#clock.clearTimeout(job.timer)
    job.hasTimer = false
  }

  /** Start an attempt unless one is in flight: one message is never attempted twice at once. */
  #run(job: Job): void {
    if (job.settled || this.#closed || job.inFlight) return
    job.inFlight = true
    const running = this.#attempt(job).finally(() => {
      job.inFlight = false
      if (job.running === running) job.running = undefined
    })
    job.running = running
  }

  async #attempt(job: Job): Promise<void> {
    const { entry } = job
    const attempt = entry.attempts + 1
    const controller = new AbortController()
    job.controller = controller
    let outcome: AttemptOutcome
    let peer: PeerError = {}
    let cause: unknown
    try {
      const response = await ky.post(inboxUrl(entry.target), {
        body: job.body,
        headers: {
          'Content-Type': 'application/json; charset=utf-8',
          Accept: 'application/json',
          'Idempotency-Key': entry.message.message_id,
        },
        retry: 0,
        timeout: this.#attemptTimeoutMs,
        throwHttpErrors: false,
        redirect: 'manual',
        fetch: this.#fetch,
        signal: controller.signal,
      })
      outcome =
        response.type === 'opaqueredirect'
          ? { kind: 'fail', reason: 'redirect: inbox deliveries do not follow redirects' }
          : classifyResponse(response.status, response.headers, this.#clock.now())
      if (outcome.kind === 'fail') peer = await readPeerError(response, this.#attemptTimeoutMs)
      else void response.body?.cancel().catch(() => {})
    } catch (error) {
      // Closed or cancelled: this attempt does not count.
      if (controller.signal.aborted) return
      outcome = classifyError(error)
      cause = error
    } finally {
      job.controller = undefined
    }
    if (job.settled) return
    entry.attempts = attempt
    // From here on the attempt is over: a timer set below (or a listener) may start the next.
    job.inFlight = false

    if (outcome.kind === 'delivered') return this.#delivered(job, outcome.status)
    if (outcome.kind === 'fail') {
      const code = peer.code ?? (isAgentMsgError(cause) ? cause.code : undefined)
      const message = peer.message ?? outcome.reason
      return this.#fail(
        job,
        outcome.status,
        code ?? codeForStatus(outcome.status),
        message,
        cause,
        peer.code,
      )
    }
    const now = this.#clock.now()
    const next = nextAttemptAt(
      outcome,
      { attempts: attempt, firstAttempt: entry.firstAttempt, now },
      { deadlineMs: this.#deadlineMs, random: this.#random },
    )
    entry.lastError = outcome.reason
    if (!next.retry) return this.#undeliverable(job, next.reason)
    entry.nextAttempt = next.at
    const state = {
      attempts: entry.attempts,
      nextAttempt: entry.nextAttempt,
      lastError: entry.lastError,
    }
    await this.#persist(job, () => this.#outbox.update(entry.id, state))
    if (job.settled) return
    // Closing: the state is stored; the next sender on this storage schedules it.
    if (!this.#closed) this.#schedule(job, next.delayMs)
    const event: RetryEvent = {
      message_id: entry.message.message_id,
      target: entry.target,
      attempt,
      delayMs: next.delayMs,
      nextAttempt: next.at,
      reason: outcome.reason,
    }
    if (outcome.status !== undefined) event.status = outcome.status
    this.#emit('retry', event)
  }

  async #settle(job: Job): Promise<void> {
    job.settled = true
    this.#clearTimer(job)
    this.#jobs.delete(job.entry.id)
    await this.#persist(job, () => this.#outbox.remove(job.entry.id))
  }

  async #delivered(job: Job, status: number): Promise<void> {
    await this.#settle(job)
    const { entry } = job
    const messageId = entry.message.message_id
    this.#emit('delivered', {
      message_id: messageId,
      target: entry.target,
      attempts: entry.attempts,
      status,
    })
    job.resolve({ messageId, target: entry.target })
  }

  async #fail(
    job: Job,
    status: number | undefined,
    code: string,
    message: string,
    cause: unknown,
    peerCode?: string,
  ): Promise<void> {
    await this.#settle(job)
    const { entry } = job
    const messageId = entry.message.message_id
    const event: FailedEvent = {
      message_id: messageId,
      target: entry.target,
      code,
      message,
      attempts: entry.attempts,
    }
    if (status !== undefined) event.status = status
    this.#emit('failed', event)
    const known = isErrorCode(code) ? code : codeForStatus(status)
    const where = status === undefined ? '' : ` with ${status}`
    job.reject(
      new DeliveryError(
        'failed',
        known,
        `delivery of ${messageId} failed${where}: ${code}: ${message}`,
        {
          messageId,
          target: entry.target,
          attempts: entry.attempts,
          ...(status !== undefined ? { peerStatus: status } : {}),
          ...(peerCode !== undefined ? { peerCode } : {}),
          cause,
        },
      ),
    )
  }

  async #undeliverable(job: Job, reason: string): Promise<void> {
    await this.#settle(job)
    const { entry } = job
    const messageId = entry.message.message_id
    this.#emit('undeliverable', {
      message_id: messageId,
      target: entry.target,
      reason,
      attempts: entry.attempts,
      firstAttempt: entry.firstAttempt,
    })
    job.reject(
      new DeliveryError(
        'undeliverable',
        'unavailable',
        `message ${messageId} is undeliverable: ${reason}`,
        {
          messageId,
          target: entry.target,
          attempts: entry.attempts,
        },
      ),
    )
  }

  /** Queue a storage write after the job's earlier ones; failures become 'error' events. */
  #persist(job: Job, write: () => Promise<void>): Promise<void> {
    const chain = job.chain.then(write).catch((error: unknown) => {
      this.#emit('error', { message_id: job.entry.message.message_id, error })
    })
    job.chain = chain
    this.#writes.add(chain)
    void chain.then(() => this.#writes.delete(chain))
    return chain
  }

  #emit<K extends keyof SenderEvents>(name: K, event: SenderEvents[K]): void {
    for (const listener of [...(this.#listeners.get(name) ?? [])]) {
      try {
        ;(listener as (e: SenderEvents[K]) => void)(event)
      } catch (error) {
        // As EventTarget does: a throwing listener neither stops the others nor the sender.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }
}

/** Jobs only ever hold inbox targets (checked on send and resume). */
function inboxUrl(target: DeliveryTarget): string {
  return target.kind === 'inbox' ? target.url : target.relayUrl
}

function newJob(entry: OutboxEntry, body: string): Job {
  let resolve!: (r: DeliveryReceipt) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<DeliveryReceipt>((res, rej) => {
    resolve = res
    reject = rej
  })
  // Resumed deliveries have no caller; their outcome is reported by events.
  promise.catch(() => {})
  return {
    entry,
    body,
    timer: undefined,
    hasTimer: false,
    inFlight: false,
    running: undefined,
    controller: undefined,
    settled: false,
    chain: Promise.resolve(),
    promise,
    resolve,
    reject,
  }
}

/** The inbox URL of a target; only `https:` inbox targets are accepted (PROFILE §6). */
function checkInboxTarget(target: DeliveryTarget): string {
  if (target?.kind !== 'inbox') {
    throw new AgentMsgError(
      'invalid_format',
      `the https sender delivers to inbox targets, not ${JSON.stringify((target as { kind?: unknown })?.kind)}`,
      { field: 'target.kind' },
    )
  }
  let url: URL
  try {
    url = new URL(target.url)
  } catch {
    throw new AgentMsgError(
      'invalid_format',
      `inbox URL ${JSON.stringify(target.url)} is not a URL`,
      {
        field: 'target.url',
      },
    )
  }
  if (url.protocol !== 'https:') {
    throw new AgentMsgError(
      'invalid_format',
      `inbox URL ${target.url} is ${url.protocol}, but only https: is used, also in development: ` +
        'use a development certificate and trust it as a custom CA (PROFILE §6)',
      { field: 'target.url' },
    )
  }
  if (url.username || url.password) {
    throw new AgentMsgError('invalid_format', 'inbox URLs must not carry credentials', {
      field: 'target.url',
    })
  }
  return target.url
}

interface PeerError {
  code?: string
  message?: string
}

/** The `{status:"error", code, message}` body of a refusal, if it has one (size- and time-capped). */
async function readPeerError(response: Response, timeoutMs: number): Promise<PeerError> {
  const reader = response.body?.getReader()
  if (!reader) return {}
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), timeoutMs)
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    while (total < ERROR_BODY_LIMIT) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      total += value.length
    }
  } catch {
    return {}
  } finally {
    clearTimeout(timer)
    void reader.cancel().catch(() => {})
  }
  if (total >= ERROR_BODY_LIMIT) return {}
  const bytes = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    bytes.set(c, at)
    at += c.length
  }
  try {
    const body: unknown = JSON.parse(new TextDecoder().decode(bytes))
    if (typeof body !== 'object' || body === null) return {}
    const { code, message } = body as { code?: unknown; message?: unknown }
    const out: PeerError = {}
    if (typeof code === 'string' && code.length <= 200) out.code = code
    if (typeof message === 'string') out.message = message.slice(0, 1000)
    return out
  } catch {
    return {}
  }
}

function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, code)
}

/** A PROFILE §6 code for a refusal without one: 3xx → not_found (not the inbox), other → invalid_format. */
function codeForStatus(status: number | undefined): ErrorCode {
  if (status === undefined) return 'forbidden'
  if (STATUS_CODES[status]) return STATUS_CODES[status]
  return status >= 300 && status <= 399 ? 'not_found' : 'invalid_format'
}

function errorCode(error: unknown): ErrorCode {
  return isAgentMsgError(error) ? error.code : 'invalid_format'
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
