import { BucketShares } from './bucket-shares.js'
import { AgentMsgError, invalidFormat } from './errors.js'
import type { Storage } from './interfaces/storage.js'
import { memoryStorage } from './storage/memory.js'
import { parseTimestamp } from './timestamps.js'

const MINUTE = 60_000
const DAY = 86_400_000
const PREFIX = 'replay/'
// Deletes per storage batch in `prune`, so one prune of a million ids is not one giant write.
const PRUNE_CHUNK = 1000

/** Options for {@link ReplayGuard}. */
export interface ReplayGuardOptions {
  /**
   * Where remembered ids are kept. Pass persistent storage so a restart does not forget them
   * (PROFILE §6); namespace it if it is shared.
   * @default memoryStorage()
   */
  storage?: Storage
  /** The clock, in epoch ms; injectable for tests. @default Date.now */
  now?: () => number
  /** A `date` older than this is stale: 7 days in a relay + 24 h of retries. @default 8 days */
  maxAgeMs?: number
  /** A `date` further ahead than this is stale (clock skew allowance). @default 5 minutes */
  maxFutureMs?: number
  /**
   * How long an id is remembered after it was first accepted. Must exceed `maxAgeMs +
   * maxFutureMs`, or a replay could outlive its id and still pass the date window.
   * @default 8 days + 10 minutes
   */
  retentionMs?: number
  /**
   * Most ids held at once, a bound on memory. When full, expired ids are pruned; if none have
   * expired, new messages are refused with `unavailable` (503 + Retry-After). @default 1_000_000
   */
  maxEntries?: number
  /**
   * Most ids one client-address bucket may hold (ids remembered with a `bucket`), so a few
   * addresses cannot fill the guard and make it refuse everyone. Past it, that bucket's new
   * messages are refused with `rate_limited` (429 + Retry-After) until its ids expire; other
   * buckets are not affected. Ids remembered without a bucket count only against `maxEntries`.
   * @default maxEntries / 16 (62,500 of the default million)
   */
  maxEntriesPerBucket?: number
  /**
   * The shares apply once the guard holds this fraction of `maxEntries`: below it one address
   * (a relay's webhook, many users behind one NAT) may use the room nobody else needs; above it
   * nobody takes more than a share, so the room left stays for everyone else.
   * @default 0.5
   */
  shareThreshold?: number
}

/** The message members the guard reads. */
export interface ReplayCheckInput {
  from: { agent: string }
  message_id: string
  date: string
  ttl_seconds?: number
}

/**
 * Replay protection (SPEC §5.5, PROFILE §6): the date window, TTL expiry, and duplicate
 * `message_id`s per sender, remembered for 8 days + 10 minutes and persisted through
 * {@link Storage} so a restart keeps them.
 *
 * Ids live in storage under `replay/<encodeURIComponent(from)>/<message_id>` with their expiry
 * (epoch ms) as the value. An in-memory index of them is loaded on first use, so checks cost no
 * storage read; this assumes one guard per storage at a time.
 *
 * @example
 * const guard = new ReplayGuard({ storage: namespacedStorage(fsStore, 'alice/') })
 * // after the message validated, before processing it:
 * if ((await guard.checkAndRemember(message)) === 'duplicate') return accepted() // 202, not again
 */
export class ReplayGuard {
  readonly #storage: Storage
  readonly #now: () => number
  readonly #maxAgeMs: number
  readonly #maxFutureMs: number
  readonly #retentionMs: number
  readonly #maxEntries: number
  // Storage key → the client-address bucket it counts against. In memory only: ids loaded from
  // storage after a restart count against `maxEntries` alone.
  readonly #shares: BucketShares<string>
  readonly #shareThreshold: number
  // Storage key → expiry (epoch ms).
  readonly #index = new Map<string, number>()
  // Storage key → whether the claim that holds it succeeded (the id was persisted).
  readonly #inFlight = new Map<string, Promise<boolean>>()
  // Storage key → the pending batch that deletes it (see `prune`).
  readonly #deleting = new Map<string, Promise<void>>()
  #loading: Promise<void> | undefined
  // Earliest expiry left after the last prune: pruning again before then frees nothing.
  #nextExpiry = -Infinity

  constructor(options: ReplayGuardOptions = {}) {
    this.#storage = options.storage ?? memoryStorage()
    this.#now = options.now ?? Date.now
    this.#maxAgeMs = nonNegative(options.maxAgeMs ?? 8 * DAY, 'maxAgeMs')
    this.#maxFutureMs = nonNegative(options.maxFutureMs ?? 5 * MINUTE, 'maxFutureMs')
    this.#retentionMs = nonNegative(options.retentionMs ?? 8 * DAY + 10 * MINUTE, 'retentionMs')
    this.#maxEntries = options.maxEntries ?? 1_000_000
    if (!Number.isInteger(this.#maxEntries) || this.#maxEntries < 1) {
      throw new RangeError(`ReplayGuard: maxEntries must be a positive integer`)
    }
    this.#shareThreshold = options.shareThreshold ?? 0.5
    if (!(this.#shareThreshold >= 0 && this.#shareThreshold <= 1)) {
      throw new RangeError('ReplayGuard: shareThreshold must be between 0 and 1')
    }
    this.#shares = new BucketShares(
      options.maxEntriesPerBucket ?? Math.max(1, Math.ceil(this.#maxEntries / 16)),
    )
  }

  /**
   * Check the date window and TTL. `date` exactly `maxAgeMs` old or exactly `maxFutureMs` ahead
   * still passes; a message is expired once `date + ttl_seconds` is in the past.
   *
   * @throws AgentMsgError `invalid_format` for a malformed `date` or `ttl_seconds`,
   *   `stale_message` when outside the window or expired.
   */
  checkFreshness(message: { date: string; ttl_seconds?: number }): void {
    const date = parseTimestamp(message.date, 'date')
    const ttl = message.ttl_seconds
    if (ttl !== undefined && !(Number.isSafeInteger(ttl) && ttl >= 1)) {
      throw invalidFormat('must be an integer ≥ 1', 'ttl_seconds')
    }
    const now = this.#now()
    const age = now - date
    if (age > this.#maxAgeMs) {
      throw new AgentMsgError(
        'stale_message',
        `date ${message.date} is ${duration(age)} old; messages older than ${duration(this.#maxAgeMs)} are refused`,
        { field: 'date' },
      )
    }
    if (-age > this.#maxFutureMs) {
      throw new AgentMsgError(
        'stale_message',
        `date ${message.date} is ${duration(-age)} in the future; at most ${duration(this.#maxFutureMs)} of clock skew is allowed`,
        { field: 'date' },
      )
    }
    if (ttl !== undefined && date + ttl * 1000 < now) {
      throw new AgentMsgError(
        'stale_message',
        `message expired ${duration(now - date - ttl * 1000)} ago (date ${message.date} + ttl_seconds ${ttl})`,
        { field: 'ttl_seconds' },
      )
    }
  }

  /** True when `messageId` from `from` was remembered and has not expired, or is being claimed. */
  async isDuplicate(from: string, messageId: string): Promise<boolean> {
    await this.#load()
    const key = replayKey(from, messageId)
    return this.#isLive(key) || this.#inFlight.has(key)
  }

  /**
   * Remember `messageId` from `from` until now + `retentionMs`, in storage before resolving.
   * `bucket`: the client-address bucket it came from, counted against its share.
   *
   * @throws AgentMsgError `unavailable` (with `retryAfter`) when `maxEntries` live ids are held,
   *   `rate_limited` when `bucket` holds its whole share.
   */
  async remember(from: string, messageId: string, bucket?: string): Promise<void> {
    await this.#load()
    await this.#store(replayKey(from, messageId), bucket)
  }

  /**
   * The whole check for an inbound message, in PROFILE §6's order: date window and TTL, then
   * the duplicate id, remembering a new one. Concurrent calls for the same (from, id) yield
   * exactly one `'new'`; a call that overlaps a claim still being persisted waits for it, and if
   * that write fails, claims the id itself. `bucket`: as in {@link remember}.
   *
   * @throws AgentMsgError as {@link checkFreshness} and {@link remember}.
   */
  async checkAndRemember(message: ReplayCheckInput, bucket?: string): Promise<'new' | 'duplicate'> {
    this.checkFreshness(message)
    await this.#load()
    const key = replayKey(message.from.agent, message.message_id)
    for (;;) {
      if (this.#isLive(key)) return 'duplicate'
      const pending = this.#inFlight.get(key)
      if (pending === undefined) break
      if (await pending) return 'duplicate'
    }
    // Check-then-claim with no await in between: this is what makes the claim exclusive.
    const claim = this.#store(key, bucket)
    const done = claim.then(
      () => true,
      () => false,
    )
    this.#inFlight.set(key, done)
    try {
      await claim
      return 'new'
    } finally {
      this.#inFlight.delete(key)
    }
  }

  /** Remove expired ids from memory and storage; resolves to how many were removed. */
  async prune(): Promise<number> {
    await this.#load()
    const now = this.#now()
    const expired: string[] = []
    for (const [key, expiry] of this.#index) if (expiry <= now) expired.push(key)
    let removed = 0
    for (let i = 0; i < expired.length; i += PRUNE_CHUNK) {
      // An id remembered again while an earlier chunk was being written is live: keep it.
      const chunk = expired.slice(i, i + PRUNE_CHUNK).filter((key) => {
        const expiry = this.#index.get(key)
        return expiry !== undefined && expiry <= now
      })
      for (const key of chunk) {
        this.#index.delete(key)
        this.#shares.remove(key)
      }
      const write = this.#storage.batch(chunk.map((key) => ({ type: 'delete', key })))
      // A remember of one of these ids waits for this delete, so the delete cannot land after
      // the new expiry and erase it from storage.
      for (const key of chunk) this.#deleting.set(key, write)
      try {
        await write
      } finally {
        for (const key of chunk) if (this.#deleting.get(key) === write) this.#deleting.delete(key)
      }
      removed += chunk.length
    }
    // Scanned after the deletes so ids remembered meanwhile count too.
    let next = Infinity
    for (const expiry of this.#index.values()) if (expiry < next) next = expiry
    this.#nextExpiry = next
    return removed
  }

  /** Number of ids currently held in memory (live or not yet pruned). */
  get size(): number {
    return this.#index.size
  }

  #isLive(key: string): boolean {
    const expiry = this.#index.get(key)
    return expiry !== undefined && expiry > this.#now()
  }

  async #store(key: string, bucket: string | undefined): Promise<void> {
    // A new id of a bucket takes a slot of its share now, so concurrent claims cannot overshoot
    // it; an id already held keeps the slot (and the bucket) it has.
    const counted = bucket !== undefined && !this.#index.has(key)
    if (counted) {
      if (this.#shares.full(bucket) && this.#contended()) await this.#makeRoomIn(bucket)
      this.#shares.add(key, bucket)
    }
    try {
      if (this.#full(key)) await this.#makeRoom(key)
      const deleting = this.#deleting.get(key)
      if (deleting !== undefined) await deleting.catch(() => undefined)
      const expiry = this.#now() + this.#retentionMs
      await this.#storage.put(key, expiry)
      this.#index.set(key, Math.max(expiry, this.#index.get(key) ?? -Infinity))
      if (expiry < this.#nextExpiry) this.#nextExpiry = expiry
    } catch (error) {
      if (counted && !this.#index.has(key)) this.#shares.remove(key)
      throw error
    }
  }

  /** A bucket holds its whole share: prune if anything expired, else refuse it alone. */
  async #makeRoomIn(bucket: string): Promise<void> {
    if (this.#now() >= this.#nextExpiry) await this.prune()
    if (!this.#shares.full(bucket) || !this.#contended()) return
    // Its oldest id expires no sooner than the guard's oldest: a lower bound, never too late.
    const waitMs = Number.isFinite(this.#nextExpiry) ? this.#nextExpiry - this.#now() : 0
    throw new AgentMsgError(
      'rate_limited',
      `too many messages from this address are remembered (${this.#shares.max}); try again later`,
      { retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) },
    )
  }

  /** True when the guard holds enough that per-bucket shares apply. */
  #contended(): boolean {
    return this.#index.size + this.#inFlight.size >= this.#maxEntries * this.#shareThreshold
  }

  /** True when storing `key` would exceed `maxEntries` (a stored key reuses its slot). */
  #full(key: string): boolean {
    if (this.#index.has(key)) return false
    // Other ids being claimed count too, or concurrent claims could overshoot the bound.
    const claims = this.#inFlight.size - (this.#inFlight.has(key) ? 1 : 0)
    return this.#index.size + claims >= this.#maxEntries
  }

  async #makeRoom(key: string): Promise<void> {
    if (this.#now() >= this.#nextExpiry) await this.prune()
    if (!this.#full(key)) return
    // Refuse rather than forget: an id dropped before its retention ends could be replayed
    // within the date window and processed twice, silently. A 503 loses nothing, because the
    // sender retries after Retry-After (PROFILE §6) and by then the oldest ids have expired.
    // With nothing stored to expire, the slots are held by in-flight claims that end soon.
    const waitMs = Number.isFinite(this.#nextExpiry) ? this.#nextExpiry - this.#now() : 0
    throw new AgentMsgError(
      'unavailable',
      `replay guard is full (${this.#maxEntries} message ids remembered); try again later`,
      { retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) },
    )
  }

  #load(): Promise<void> {
    this.#loading ??= (async () => {
      for (const [key, value] of await this.#storage.list(PREFIX)) {
        // Anything else under the prefix is not ours to interpret; a later remember overwrites it.
        if (typeof value !== 'number') continue
        // max: an id remembered while the list was being read keeps its newer expiry.
        this.#index.set(key, Math.max(value, this.#index.get(key) ?? -Infinity))
      }
      // Expired ids loaded here are dropped by the next prune, not now, to keep startup cheap.
    })().catch((error: unknown) => {
      // Let the next call try again instead of caching the failure for the process's lifetime.
      this.#loading = undefined
      throw error
    })
    return this.#loading
  }
}

function replayKey(from: string, messageId: string): string {
  // `from` is encoded so it cannot contain `/`: the first `/` after the prefix ends it.
  return `${PREFIX}${encodeURIComponent(from)}/${messageId}`
}

function nonNegative(value: number, name: string): number {
  if (!(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`ReplayGuard: ${name} must be a finite number ≥ 0`)
  }
  return value
}

/** `691200001` → `8 d 0 h 0 min 0.001 s`: exact, and still readable in an error message. */
function duration(ms: number): string {
  const parts: string[] = []
  let rest = ms
  for (const [unit, size] of [
    ['d', DAY],
    ['h', 3_600_000],
    ['min', MINUTE],
  ] as const) {
    const n = Math.floor(rest / size)
    if (n > 0 || parts.length > 0) parts.push(`${n} ${unit}`)
    rest -= n * size
  }
  parts.push(`${Number((rest / 1000).toFixed(3))} s`)
  return parts.join(' ')
}
