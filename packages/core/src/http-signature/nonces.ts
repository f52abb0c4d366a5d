/** The memory of (keyid, nonce) pairs that makes a relay request usable once (PROFILE §9). */
import { BucketShares } from '../bucket-shares.js'
import { AgentMsgError } from '../errors.js'
import { NONCE_RETENTION_MS } from './components.js'

/** Options for {@link NonceMemory}. */
export interface NonceMemoryOptions {
  /** The clock, epoch ms. @default Date.now */
  now?: () => number
  /** How long a pair is remembered after it was first accepted. @default 10 minutes */
  retentionMs?: number
  /**
   * Most pairs held at once. When full, expired pairs are dropped; if none has expired, new
   * requests are refused with 503 `unavailable` rather than forgetting a live nonce (which
   * would let its request be replayed). @default 500_000
   */
  maxEntries?: number
  /**
   * Most pairs one client-address bucket may hold (pairs remembered with a `bucket`), so a few
   * addresses cannot fill the memory and make the relay refuse everyone. Past it, that bucket's
   * requests are refused with 429 `rate_limited` until its pairs expire. The default is above
   * what the default per-address limit (600 a minute, burst 100) lets one address send in the
   * 10 minutes a pair is held (6,100).
   * @default maxEntries / 64 (7,812 of the default 500,000)
   */
  maxEntriesPerBucket?: number
}

/**
 * Remembers (keyid, nonce) pairs of accepted relay requests for 10 minutes (PROFILE §9), in
 * memory. `created` may be up to 5 minutes off either way, so a signature is acceptable for at
 * most 10 minutes, and remembering each pair for 10 minutes after its first use covers that
 * whole window.
 *
 * Memory is bounded by `maxEntries`; see {@link NonceMemoryOptions.maxEntries}.
 */
export class NonceMemory {
  readonly #now: () => number
  readonly #retentionMs: number
  readonly #maxEntries: number
  // `${keyid}\n${nonce}` → expiry (epoch ms). Neither part can hold an LF.
  readonly #entries = new Map<string, number>()
  readonly #shares: BucketShares<string>

  constructor(options: NonceMemoryOptions = {}) {
    this.#now = options.now ?? Date.now
    this.#retentionMs = options.retentionMs ?? NONCE_RETENTION_MS
    this.#maxEntries = options.maxEntries ?? 500_000
    if (!Number.isFinite(this.#retentionMs) || this.#retentionMs < 0) {
      throw new RangeError('retentionMs must be a finite number ≥ 0')
    }
    if (!Number.isSafeInteger(this.#maxEntries) || this.#maxEntries < 1) {
      throw new RangeError('maxEntries must be a positive integer')
    }
    this.#shares = new BucketShares(
      options.maxEntriesPerBucket ?? Math.max(1, Math.floor(this.#maxEntries / 64)),
    )
  }

  /** Pairs currently held (expired ones not yet pruned included). */
  get size(): number {
    return this.#entries.size
  }

  /**
   * Record the pair unless it was seen within the retention period. A pair stays remembered
   * while `now ≤ first use + retentionMs`.
   *
   * @param now - overrides the clock for this call (epoch ms).
   * @param bucket - the client-address bucket of the request, counted against its share.
   * @returns `'fresh'` (now remembered) or `'replay'`.
   * @throws AgentMsgError `unavailable` with `retryAfter` when the memory is full of live pairs,
   *   `rate_limited` when `bucket` holds its whole share.
   */
  checkAndRemember(
    keyId: string,
    nonce: string,
    now: number = this.#now(),
    bucket?: string,
  ): 'fresh' | 'replay' {
    const name = `${keyId}\n${nonce}`
    const expiry = this.#entries.get(name)
    if (expiry !== undefined) {
      if (now <= expiry) return 'replay'
      this.#forget(name)
    }
    if (bucket !== undefined && this.#shares.full(bucket)) {
      this.prune(now)
      if (this.#shares.full(bucket)) {
        // The oldest pair held expires no later than this bucket's oldest: a lower bound.
        const oldest = this.#entries.values().next().value ?? now
        throw new AgentMsgError(
          'rate_limited',
          'too many recent relay requests from this address to remember their nonces',
          { retryAfter: Math.max(1, Math.ceil((oldest - now) / 1000)) },
        )
      }
    }
    if (this.#entries.size >= this.#maxEntries) this.prune(now)
    if (this.#entries.size >= this.#maxEntries) {
      let earliest = Infinity
      for (const e of this.#entries.values()) if (e < earliest) earliest = e
      throw new AgentMsgError(
        'unavailable',
        'too many recent relay requests to remember their nonces',
        {
          retryAfter: Math.max(1, Math.ceil((earliest - now) / 1000)),
        },
      )
    }
    this.#entries.set(name, now + this.#retentionMs)
    if (bucket !== undefined) this.#shares.add(name, bucket)
    return 'fresh'
  }

  /** Drop expired pairs. Called when the memory is full; call it on a timer to keep it small. */
  prune(now: number = this.#now()): void {
    // Insertion order is expiry order while the clock runs forward: stop at the first live one.
    for (const [name, expiry] of this.#entries) {
      if (now <= expiry) break
      this.#forget(name)
    }
    if (this.#entries.size < this.#maxEntries) return
    // A clock that stepped back leaves expired pairs behind live ones: sweep everything.
    for (const [name, expiry] of this.#entries) if (now > expiry) this.#forget(name)
  }

  #forget(name: string): void {
    this.#entries.delete(name)
    this.#shares.remove(name)
  }
}
