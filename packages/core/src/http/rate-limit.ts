/** Token buckets for the per-address and per-sender limits of PROFILE §6, bounded in memory. */

/** One limit: a sustained rate and a burst. */
export interface RateLimit {
  /** Requests refilled per minute. `Infinity` disables the limit. */
  perMinute: number
  /** Bucket size: how many may arrive at once after a quiet spell. */
  burst: number
}

/**
 * A token bucket per key. Keys are kept in least-recently-used order and the oldest are dropped
 * beyond `maxKeys`, so a flood of distinct keys cannot grow memory; a dropped key had been
 * idle longest, so its bucket was the likeliest to be full again anyway.
 */
export class TokenBuckets {
  readonly #perMs: number
  readonly #burst: number
  readonly #buckets = new Map<string, { tokens: number; at: number }>()
  readonly disabled: boolean

  constructor(
    limit: RateLimit,
    private readonly now: () => number,
    private readonly maxKeys = 100_000,
  ) {
    if (!(limit.perMinute > 0)) throw new RangeError('perMinute must be > 0 (Infinity disables)')
    if (!(limit.burst >= 1)) throw new RangeError('burst must be ≥ 1')
    this.disabled = limit.perMinute === Infinity
    this.#perMs = limit.perMinute / 60_000
    this.#burst = limit.burst
  }

  /**
   * Take one token for `key`. Returns 0 when allowed, else the whole seconds (≥ 1) until a
   * token will be there — the `Retry-After` value.
   */
  take(key: string): number {
    if (this.disabled) return 0
    const now = this.now()
    const map = this.#buckets
    const b = map.get(key) ?? { tokens: this.#burst, at: now }
    if (map.delete(key))
      b.tokens = Math.min(this.#burst, b.tokens + Math.max(0, now - b.at) * this.#perMs)
    else if (map.size >= this.maxKeys) map.delete(map.keys().next().value as string)
    b.at = now
    map.set(key, b)
    if (b.tokens < 1) return Math.max(1, Math.ceil((1 - b.tokens) / this.#perMs / 1000))
    b.tokens -= 1
    return 0
  }

  /** Number of keys currently tracked. */
  get size(): number {
    return this.#buckets.size
  }
}
