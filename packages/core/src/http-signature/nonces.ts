import { AgentMsgError, nonNegative, positiveInt } from '../errors.js'
import { PROFILE } from '../profile.js'
import { BucketShares } from '../replay.js'

/** Options for {@link NonceMemory}. */
export interface NonceMemoryOptions {
  now?: () => number
  /** How long a pair is remembered after its first use. @default PROFILE.nonceMemoryMs */
  retentionMs?: number
  /** Most pairs held; when full of live ones, `unavailable` (never forget one). @default 500_000 */
  maxEntries?: number
  /** Most pairs one client-address bucket holds (then `rate_limited`). @default maxEntries / 64 */
  maxEntriesPerBucket?: number
}

/** (keyid, nonce) pairs of accepted relay requests (PROFILE §9), kept twice the clock skew. */
export class NonceMemory {
  readonly #now: () => number
  readonly #retentionMs: number
  readonly #maxEntries: number
  // `${keyid}\n${nonce}` → expiry (epoch ms); neither part can hold an LF.
  readonly #entries = new Map<string, number>()
  readonly #shares: BucketShares<string>

  constructor(options: NonceMemoryOptions = {}) {
    this.#now = options.now ?? Date.now
    this.#retentionMs = nonNegative(options.retentionMs ?? PROFILE.nonceMemoryMs, 'retentionMs')
    this.#maxEntries = positiveInt(options.maxEntries ?? 500_000, 'maxEntries')
    this.#shares = new BucketShares(
      options.maxEntriesPerBucket ?? Math.max(1, Math.floor(this.#maxEntries / 64)),
    )
  }

  /** Pairs remembered now. */
  get size(): number {
    return this.#entries.size
  }

  /** Record the pair unless seen within the retention; `bucket`: the client-address bucket. */
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
      // The oldest pair held expires no later than this bucket's oldest: a lower bound.
      const oldest = this.#entries.values().next().value ?? now
      if (this.#shares.full(bucket)) {
        const text = 'too many recent relay requests from this address to remember their nonces'
        throw new AgentMsgError('rate_limited', text, { retryAfter: seconds(oldest - now) })
      }
    }
    if (this.#entries.size >= this.#maxEntries) this.prune(now)
    if (this.#entries.size >= this.#maxEntries) {
      let earliest = Infinity
      for (const e of this.#entries.values()) if (e < earliest) earliest = e
      const text = 'too many recent relay requests to remember their nonces'
      throw new AgentMsgError('unavailable', text, { retryAfter: seconds(earliest - now) })
    }
    this.#entries.set(name, now + this.#retentionMs)
    if (bucket !== undefined) this.#shares.add(name, bucket)
    return 'fresh'
  }

  /** Drop expired pairs (also on a timer, to keep the memory small). */
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

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))
