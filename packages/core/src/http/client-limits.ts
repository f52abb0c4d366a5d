/**
 * The request limits of PROFILE §6, shared by the inbox and the relay: token buckets (per client
 * address, per verified sender), and per client address — its `X-Forwarded-For` believed from
 * trusted proxies only, bucketed (IPv6 per /64) — the request rate and the bodies read at once:
 * at most 8 per bucket (a ninth → 429 `rate_limited`, `Retry-After: 1`) and 128 overall
 * (→ 503), so the memory held for one client is bounded whatever it sends or fails to read.
 */
import { PROFILE } from '../profile.js'
import { AddressSet, addressBucket, clientAddress } from './address.js'
import { errorReply, type HttpReply } from './replies.js'

/** One limit: requests refilled per minute (`Infinity`: no limit), and how many at once. */
export interface RateLimit {
  /** Refill rate, a minute. */
  perMinute: number
  /** The bucket's size: how many at once. */
  burst: number
}

/**
 * A token bucket per key, at most `maxKeys` of them: the least recently used goes, so a flood
 * of keys cannot grow memory (and an idle bucket was the likeliest to be full again anyway).
 */
export class TokenBuckets {
  readonly #perMs: number
  readonly #burst: number
  readonly #buckets = new Map<string, { tokens: number; at: number }>()

  constructor(
    limit: RateLimit,
    private readonly now: () => number,
    private readonly maxKeys = 100_000,
  ) {
    if (!(limit.perMinute > 0)) throw new RangeError('perMinute must be > 0 (Infinity disables)')
    if (!(limit.burst >= 1)) throw new RangeError('burst must be ≥ 1')
    this.#perMs = limit.perMinute / 60_000
    this.#burst = limit.burst
  }

  /** Take a token for `key`: 0 when allowed, else the whole seconds (≥ 1) until one is there. */
  take(key: string): number {
    if (this.#perMs === Infinity) return 0
    const now = this.now()
    const map = this.#buckets
    const b = map.get(key) ?? { tokens: this.#burst, at: now }
    const refill = Math.max(0, now - b.at) * this.#perMs
    if (map.delete(key)) b.tokens = Math.min(this.#burst, b.tokens + refill)
    else if (map.size >= this.maxKeys) map.delete(map.keys().next().value as string)
    b.at = now
    map.set(key, b)
    if (b.tokens < 1) return Math.max(1, Math.ceil((1 - b.tokens) / this.#perMs / 1000))
    b.tokens -= 1
    return 0
  }

  /** Keys tracked now. */
  get size(): number {
    return this.#buckets.size
  }
}

/** Options of {@link ClientLimits}; the defaults are PROFILE §6's. */
export interface ClientLimitsOptions {
  /**
   * The rate per client address (600 a minute, burst 100), or `false`: no per-address limiting
   * at all, only meant for a server whose adapter cannot learn the client's address, behind a
   * proxy that limits per address itself (PROFILE §6: never one shared bucket for everyone).
   */
  perAddress?: Partial<RateLimit> | false
  /** Most bodies read at once from one address bucket (8); past it → 429. */
  maxReadsPerAddress?: number
  /** Most bodies read at once overall (128); past it → 503. */
  maxConcurrentReads?: number
  /** Proxies (addresses, CIDR ranges) whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[]
  /** Most address buckets whose rate is kept. @default 100_000 */
  maxTrackedKeys?: number
  now?: () => number
}

/** No client address with per-address limiting on: a misconfiguration, answered 500. */
export class MissingClientAddressError extends Error {
  override readonly name = 'MissingClientAddressError'

  constructor(server: string) {
    super(
      `${server}: the server adapter passed no client address, so requests cannot be limited ` +
        'per address (PROFILE §6). Pass it (fetch(request, { clientAddress })), or, when a ' +
        'proxy in front limits per address, set limits.perAddress to false.',
    )
  }
}

/** The per-address rate and read limits of one server (see the module comment). */
export class ClientLimits {
  readonly #rate: TokenBuckets | undefined
  readonly #trusted: AddressSet
  readonly #max: { bucket: number; all: number }
  // Bucket → bodies being read now; `''` counts them all.
  readonly #reads = new Map<string, number>()

  /** `server` names the server in the misconfiguration error (`agentmsg inbox`, …). */
  constructor(
    options: ClientLimitsOptions = {},
    private readonly server = 'agentmsg server',
  ) {
    const { perAddress: given, now = Date.now } = options
    const { perMinute = PROFILE.perAddress.perMinute, burst = PROFILE.perAddress.burst } =
      given || {}
    const rate = given === false ? undefined : { perMinute, burst }
    this.#rate = rate && new TokenBuckets(rate, now, options.maxTrackedKeys)
    this.#trusted = new AddressSet(options.trustedProxies)
    const { maxReadsPerAddress: bucket = PROFILE.readsPerAddress } = options
    const { maxConcurrentReads: all = PROFILE.readsTotal } = options
    if (!(bucket >= 1 && all >= 1)) throw new RangeError('the read limits must be ≥ 1')
    this.#max = { bucket, all }
  }

  /**
   * The bucket of a request from `peer` (its connection's address; `forwardedFor` is read only
   * when proxies are trusted), `undefined` when per-address limiting is off. Without `peer`
   * while it is on: `MissingClientAddressError`.
   */
  bucket(peer: string | undefined, forwardedFor: () => string | null): string | undefined {
    if (this.#rate === undefined) return undefined
    if (!peer) throw new MissingClientAddressError(this.server)
    return this.#bucket(peer, forwardedFor, PROFILE.ipv6BucketBits)
  }

  /** The bucket stored bytes are charged to (PROFILE §9: IPv6 per /48); none without `peer`. */
  storageBucket(peer: string | undefined, forwardedFor: () => string | null): string | undefined {
    return peer ? this.#bucket(peer, forwardedFor, PROFILE.storageIpv6BucketBits) : undefined
  }

  #bucket(peer: string, forwardedFor: () => string | null, bits: number): string {
    const forwarded = this.#trusted.size > 0 ? forwardedFor() : null
    return addressBucket(clientAddress(peer, forwarded, this.#trusted), bits)
  }

  /** Take one request of `bucket`'s rate: 0 to go on, else the seconds to wait (`Retry-After`). */
  take(bucket: string | undefined): number {
    return bucket === undefined ? 0 : (this.#rate?.take(bucket) ?? 0)
  }

  /**
   * Start reading a body from `bucket`: a function that ends the read (once), or the refusal to
   * answer instead (429 for the bucket's cap, 503 for the overall one; `Retry-After: 1`).
   */
  startRead(bucket: string | undefined): (() => void) | HttpReply {
    const keys = bucket === undefined ? [''] : ['', `:${bucket}`]
    const [all = 0, mine = 0] = keys.map((key) => this.#reads.get(key) ?? 0)
    const busy = mine >= this.#max.bucket ? 'from this address ' : all >= this.#max.all ? '' : null
    if (busy !== null) {
      const code = busy ? 'rate_limited' : 'unavailable'
      return errorReply(code, `too many requests ${busy}are being received at once`)
    }
    const add = (n: number) => {
      for (const key of keys) {
        const left = (this.#reads.get(key) ?? 0) + n
        if (left === 0) this.#reads.delete(key)
        else this.#reads.set(key, left)
      }
    }
    add(1)
    let done = false
    return () => done || ((done = true), add(-1))
  }
}
