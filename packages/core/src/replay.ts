import { AgentMsgError, invalidFormat, nonNegative, positiveInt } from './errors.js'
import type { Storage } from './interfaces/storage.js'
import { PROFILE } from './profile.js'
import { memoryStorage } from './storage/memory.js'
import { duration, parseTimestamp } from './timestamps.js'

const PREFIX = 'replay/'
// Deletes per storage batch in `prune`.
const PRUNE_CHUNK = 1000

/** Options for {@link ReplayGuard}. */
export interface ReplayGuardOptions {
  /** Persistent storage keeps ids across restarts (PROFILE §6). @default memoryStorage() */
  storage?: Storage
  now?: () => number
  /** @default PROFILE.dateWindowMs */
  maxAgeMs?: number
  /** @default PROFILE.clockSkewMs */
  maxFutureMs?: number
  /** Must exceed `maxAgeMs + maxFutureMs`, or a replay could outlive its id. @default PROFILE.replayMemoryMs */
  retentionMs?: number
  /** Most ids held; when full of live ids, new messages get `unavailable`. @default 1_000_000 */
  maxEntries?: number
  /** Most ids one client-address bucket holds (then `rate_limited`). @default maxEntries / 16 */
  maxEntriesPerBucket?: number
  /** Shares apply once this fraction of `maxEntries` is held. @default 0.5 */
  shareThreshold?: number
}

/** Replay protection (PROFILE §6): date window, TTL, duplicate ids; one guard per storage. */
export class ReplayGuard {
  readonly #storage: Storage
  readonly #now: () => number
  readonly #maxAgeMs: number
  readonly #maxFutureMs: number
  readonly #retentionMs: number
  readonly #maxEntries: number
  // In memory only: ids loaded from storage after a restart count against `maxEntries` alone.
  readonly #shares: BucketShares<string>
  readonly #shareThreshold: number
  // Storage key → expiry (epoch ms); → whether its claim was persisted; → the batch deleting it.
  readonly #index = new Map<string, number>()
  readonly #inFlight = new Map<string, Promise<boolean>>()
  readonly #deleting = new Map<string, Promise<void>>()
  #loading: Promise<void> | undefined
  // Earliest expiry left after the last prune: pruning before then frees nothing.
  #nextExpiry = -Infinity

  constructor(options: ReplayGuardOptions = {}) {
    this.#storage = options.storage ?? memoryStorage()
    this.#now = options.now ?? Date.now
    this.#maxAgeMs = nonNegative(options.maxAgeMs ?? PROFILE.dateWindowMs, 'ReplayGuard: maxAgeMs')
    this.#maxFutureMs = nonNegative(options.maxFutureMs ?? PROFILE.clockSkewMs, 'maxFutureMs')
    this.#retentionMs = nonNegative(options.retentionMs ?? PROFILE.replayMemoryMs, 'retentionMs')
    this.#maxEntries = positiveInt(options.maxEntries ?? 1_000_000, 'ReplayGuard: maxEntries')
    this.#shareThreshold = options.shareThreshold ?? 0.5
    if (!(this.#shareThreshold >= 0 && this.#shareThreshold <= 1)) {
      throw new RangeError('ReplayGuard: shareThreshold must be between 0 and 1')
    }
    this.#shares = new BucketShares(
      options.maxEntriesPerBucket ?? Math.max(1, Math.ceil(this.#maxEntries / 16)),
    )
  }

  /** The date window (bounds inclusive) and TTL. */
  checkFreshness(message: { date: string; ttl_seconds?: number }): void {
    const date = parseTimestamp(message.date, 'date')
    const ttl = message.ttl_seconds
    if (ttl !== undefined && !(Number.isSafeInteger(ttl) && ttl >= 1)) {
      throw invalidFormat('must be an integer ≥ 1', 'ttl_seconds')
    }
    const now = this.#now()
    const age = now - date
    const stale = (text: string, field = 'date') =>
      new AgentMsgError('stale_message', text, { field })
    if (age > this.#maxAgeMs) {
      throw stale(
        `date ${message.date} is ${duration(age)} old; messages older than ${duration(this.#maxAgeMs)} are refused`,
      )
    }
    if (-age > this.#maxFutureMs) {
      throw stale(
        `date ${message.date} is ${duration(-age)} in the future; at most ${duration(this.#maxFutureMs)} of clock skew is allowed`,
      )
    }
    if (ttl !== undefined && date + ttl * 1000 < now) {
      throw stale(
        `message expired ${duration(now - date - ttl * 1000)} ago (date ${message.date} + ttl_seconds ${ttl})`,
        'ttl_seconds',
      )
    }
  }

  /** True when the id was remembered and has not expired, or is being claimed. */
  async isDuplicate(from: string, messageId: string): Promise<boolean> {
    await this.#load()
    const key = replayKey(from, messageId)
    return this.#isLive(key) || this.#inFlight.has(key)
  }

  /** Remember the id (in storage before resolving), counted against `bucket`. */
  async remember(from: string, messageId: string, bucket?: string): Promise<void> {
    await this.#load()
    await this.#store(replayKey(from, messageId), bucket)
  }

  /** Freshness, then the duplicate id (PROFILE §6): of concurrent calls exactly one is `new`. */
  async checkAndRemember(
    message: { from: { agent: string }; message_id: string; date: string; ttl_seconds?: number },
    bucket?: string,
  ): Promise<'new' | 'duplicate'> {
    this.checkFreshness(message)
    await this.#load()
    const key = replayKey(message.from.agent, message.message_id)
    for (;;) {
      if (this.#isLive(key)) return 'duplicate'
      const pending = this.#inFlight.get(key)
      if (pending === undefined) break
      if (await pending) return 'duplicate'
    }
    // No await between the check and the claim: that makes the claim exclusive.
    const claim = this.#store(key, bucket)
    this.#inFlight.set(
      key,
      claim.then(
        () => true,
        () => false,
      ),
    )
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
      // An id remembered again while an earlier chunk was written is live: keep it.
      const chunk = expired.slice(i, i + PRUNE_CHUNK).filter((key) => {
        const expiry = this.#index.get(key)
        return expiry !== undefined && expiry <= now
      })
      for (const key of chunk) {
        this.#index.delete(key)
        this.#shares.remove(key)
      }
      const write = this.#storage.batch(chunk.map((key) => ({ type: 'delete', key })))
      // A remember of one of these ids waits for this delete, so it cannot erase the new expiry.
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

  /** Ids held in memory (live or not yet pruned). */
  get size(): number {
    return this.#index.size
  }

  #isLive(key: string): boolean {
    const expiry = this.#index.get(key)
    return expiry !== undefined && expiry > this.#now()
  }

  async #store(key: string, bucket: string | undefined): Promise<void> {
    // A new id takes its bucket's slot now, so concurrent claims cannot overshoot the share.
    const counted = bucket !== undefined && !this.#index.has(key)
    if (counted) {
      if (this.#full(key, bucket)) await this.#makeRoom(key, bucket)
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

  // A bucket's share applies only once the guard is contended.
  #full(key: string, bucket?: string): boolean {
    if (bucket !== undefined) {
      const held = this.#index.size + this.#inFlight.size
      return this.#shares.full(bucket) && held >= this.#maxEntries * this.#shareThreshold
    }
    if (this.#index.has(key)) return false
    // Other claims count too, or concurrent claims could overshoot the bound.
    const claims = this.#inFlight.size - (this.#inFlight.has(key) ? 1 : 0)
    return this.#index.size + claims >= this.#maxEntries
  }

  // Refuse rather than forget: an id dropped early could be replayed within the date window. The
  // oldest id held expires no later than any bucket's oldest: a lower bound on the wait.
  async #makeRoom(key: string, bucket?: string): Promise<void> {
    if (this.#now() >= this.#nextExpiry) await this.prune()
    if (!this.#full(key, bucket)) return
    const waitMs = Number.isFinite(this.#nextExpiry) ? this.#nextExpiry - this.#now() : 0
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
    if (bucket !== undefined) {
      const text = `too many messages from this address are remembered (${this.#shares.max})`
      throw new AgentMsgError('rate_limited', `${text}; try again later`, { retryAfter })
    }
    const text = `replay guard is full (${this.#maxEntries} message ids remembered); try again later`
    throw new AgentMsgError('unavailable', text, { retryAfter })
  }

  #load(): Promise<void> {
    this.#loading ??= (async () => {
      for (const [key, value] of await this.#storage.list(PREFIX)) {
        if (typeof value !== 'number') continue
        // An id remembered while the list was read keeps its newer expiry.
        this.#index.set(key, Math.max(value, this.#index.get(key) ?? -Infinity))
      }
    })().catch((error: unknown) => {
      this.#loading = undefined
      throw error
    })
    return this.#loading
  }
}

// `from` is encoded so it holds no `/`: the first `/` after the prefix ends it.
const replayKey = (from: string, messageId: string) =>
  `${PREFIX}${encodeURIComponent(from)}/${messageId}`

// Per-bucket shares of a bounded memory (replay ids, relay nonces): a few client addresses cannot
// fill it and make it refuse everyone (PROFILE §6). Unbucketed entries count only globally.
/** Counts the entries each bucket holds, for a memory whose entries are keyed by `K`. */
export class BucketShares<K> {
  readonly #counts = new Map<string, number>()
  readonly #owner = new Map<K, string>()

  constructor(readonly max: number) {
    positiveInt(max, 'the per-bucket share')
  }

  full(bucket: string): boolean {
    return (this.#counts.get(bucket) ?? 0) >= this.max
  }

  /** Count `key` against `bucket` (a key already counted keeps its first bucket). */
  add(key: K, bucket: string): void {
    if (this.#owner.has(key)) return
    this.#owner.set(key, bucket)
    this.#counts.set(bucket, (this.#counts.get(bucket) ?? 0) + 1)
  }

  /** `key` was forgotten: its bucket gets the slot back. */
  remove(key: K): void {
    const bucket = this.#owner.get(key)
    if (bucket === undefined) return
    this.#owner.delete(key)
    const left = (this.#counts.get(bucket) ?? 0) - 1
    if (left > 0) this.#counts.set(bucket, left)
    else this.#counts.delete(bucket)
  }
}
