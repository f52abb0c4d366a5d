/**
 * Per-bucket shares of a bounded memory (the replay guard's ids, a relay's nonces). The memory
 * keeps its global bound; a share caps what one client-address bucket may hold of it, so a few
 * addresses cannot fill it and make it refuse everyone (PROFILE §6, "no shared
 * bucket"). Entries remembered without a bucket (relay deliveries, ids loaded from storage)
 * count only against the global bound.
 */

interface Share {
  readonly bucket: string
  count: number
}

/** Counts the entries each bucket holds, for a memory whose entries are keyed by `K`. */
export class BucketShares<K> {
  readonly #max: number
  readonly #shares = new Map<string, Share>()
  // Entry → the share it counts against. Bucketed entries only.
  readonly #owner = new Map<K, Share>()

  /** `max`: the most entries one bucket may hold. */
  constructor(max: number) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new RangeError('the per-bucket share must be a positive integer')
    }
    this.#max = max
  }

  /** The most entries one bucket may hold. */
  get max(): number {
    return this.#max
  }

  /** Entries `bucket` holds now. */
  count(bucket: string): number {
    return this.#shares.get(bucket)?.count ?? 0
  }

  /** True when `bucket` holds its whole share. */
  full(bucket: string): boolean {
    return this.count(bucket) >= this.#max
  }

  /** Count `key` against `bucket` (a key already counted keeps its first bucket). */
  add(key: K, bucket: string): void {
    if (this.#owner.has(key)) return
    let share = this.#shares.get(bucket)
    if (share === undefined) {
      share = { bucket, count: 0 }
      this.#shares.set(bucket, share)
    }
    share.count++
    this.#owner.set(key, share)
  }

  /** `key` was forgotten: its bucket gets the slot back. */
  remove(key: K): void {
    const share = this.#owner.get(key)
    if (share === undefined) return
    this.#owner.delete(key)
    share.count--
    if (share.count === 0) this.#shares.delete(share.bucket)
  }
}
