// Per-bucket shares of a bounded memory (replay ids, relay nonces): a few client addresses cannot
// fill it and make it refuse everyone (PROFILE §6). Unbucketed entries count only globally.
import { positiveInt } from './errors.js'

interface Share {
  readonly bucket: string
  count: number
}

/** Counts the entries each bucket holds, for a memory whose entries are keyed by `K`. */
export class BucketShares<K> {
  readonly #max: number
  readonly #shares = new Map<string, Share>()
  readonly #owner = new Map<K, Share>()

  constructor(max: number) {
    this.#max = positiveInt(max, 'the per-bucket share')
  }

  get max(): number {
    return this.#max
  }

  count(bucket: string): number {
    return this.#shares.get(bucket)?.count ?? 0
  }

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
