/**
 * The per-client-address steps of PROFILE §6, shared by the inbox and the relay: the client's
 * address (`X-Forwarded-For` from trusted proxies only), its bucket (IPv6 per /64), the request
 * rate per bucket, and the bodies read at once — at most 8 per bucket (a ninth → 429
 * `rate_limited`, `Retry-After: 1`) and 128 overall (→ 503), so the memory held for one client
 * is bounded whatever it sends or fails to read. Isomorphic.
 */
import { PROFILE } from '../profile.js'
import { AddressSet, addressBucket, clientAddress } from './address.js'
import { type RateLimit, TokenBuckets } from './rate-limit.js'
import { errorReply, type HttpReply } from './replies.js'

/** Options of {@link ClientLimits}. */
export interface ClientLimitsOptions {
  /**
   * The request rate per client address, or `false`: no per-address limiting at all (no rate,
   * no per-address read cap, no per-address shares). `false` is required, and only meant, for
   * a server whose adapter cannot learn the client's address, e.g. behind a proxy that limits
   * per address itself (PROFILE §6: never one shared bucket for everyone).
   * @default PROFILE.perAddress (600 a minute, burst 100)
   */
  perAddress?: Partial<RateLimit> | false
  /** Most request bodies read at once from one address bucket; past it → 429. @default 8 */
  maxReadsPerAddress?: number
  /** Most request bodies read at once overall; past it → 503. @default 128 */
  maxConcurrentReads?: number
  /** Proxies (addresses or CIDR ranges) whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[]
  /** Most address buckets whose rate state is kept (least recently seen dropped). @default 100_000 */
  maxTrackedKeys?: number
  /** The clock, epoch ms. @default Date.now */
  now?: () => number
}

/**
 * A request reached a server with per-address limiting on, and its adapter passed no client
 * address. A misconfiguration, answered 500 and reported to the operator (`onError`): either
 * pass the peer address (`fetch(request, { clientAddress })`) or set `perAddress: false`.
 */
export class MissingClientAddressError extends Error {
  constructor(server: string) {
    super(
      `${server}: the server adapter passed no client address, so requests cannot be limited ` +
        'per address (PROFILE §6). Pass it (fetch(request, { clientAddress })), or, when a ' +
        'proxy in front limits per address, set limits.perAddress to false.',
    )
    this.name = 'MissingClientAddressError'
  }
}

/** The per-address rate and read limits of one server (see the module comment). */
export class ClientLimits {
  readonly #rate: TokenBuckets | undefined
  readonly #trusted: AddressSet
  readonly #maxPerBucket: number
  readonly #maxReads: number
  // Bucket → bodies being read now. At most `maxConcurrentReads` keys.
  readonly #reads = new Map<string, number>()
  #reading = 0

  /** `server` names the server in the misconfiguration error (`agentmsg inbox`, …). */
  constructor(
    options: ClientLimitsOptions = {},
    private readonly server = 'agentmsg server',
  ) {
    const given = options.perAddress
    this.#rate =
      given === false
        ? undefined
        : new TokenBuckets(
            {
              perMinute: given?.perMinute ?? PROFILE.perAddress.perMinute,
              burst: given?.burst ?? PROFILE.perAddress.burst,
            },
            options.now ?? Date.now,
            options.maxTrackedKeys,
          )
    this.#trusted = new AddressSet(options.trustedProxies)
    this.#maxPerBucket = options.maxReadsPerAddress ?? PROFILE.readsPerAddress
    this.#maxReads = options.maxConcurrentReads ?? PROFILE.readsTotal
    if (!(this.#maxPerBucket >= 1)) throw new RangeError('maxReadsPerAddress must be ≥ 1')
    if (!(this.#maxReads >= 1)) throw new RangeError('maxConcurrentReads must be ≥ 1')
  }

  /**
   * The bucket of a request from `peer` (the connection's address); `forwardedFor` is asked
   * only when proxies are trusted. `undefined` when per-address limiting is off.
   *
   * @throws MissingClientAddressError when limiting is on and there is no address.
   */
  bucket(peer: string | undefined, forwardedFor: () => string | null): string | undefined {
    if (this.#rate === undefined) return undefined
    if (!peer) throw new MissingClientAddressError(this.server)
    const forwarded = this.#trusted.size > 0 ? forwardedFor() : null
    return addressBucket(clientAddress(peer, forwarded, this.#trusted))
  }

  /** Take one request of `bucket`'s rate: 0 to go on, else the seconds to wait (`Retry-After`). */
  take(bucket: string | undefined): number {
    return bucket === undefined ? 0 : (this.#rate?.take(bucket) ?? 0)
  }

  /**
   * Start reading a body from `bucket`: a function that ends the read (again: nothing), or the
   * refusal to answer instead (429 for the bucket's cap, 503 for the overall one; `Retry-After: 1`).
   */
  startRead(bucket: string | undefined): (() => void) | HttpReply {
    const mine = bucket === undefined ? 0 : (this.#reads.get(bucket) ?? 0)
    if (mine >= this.#maxPerBucket) {
      return errorReply('rate_limited', 'too many requests from this address are being received')
    }
    if (this.#reading >= this.#maxReads) {
      return errorReply('unavailable', 'too many requests are being received at once')
    }
    this.#reading++
    if (bucket !== undefined) this.#reads.set(bucket, mine + 1)
    let done = false
    return () => {
      if (done) return
      done = true
      this.#reading--
      if (bucket === undefined) return
      const left = (this.#reads.get(bucket) ?? 1) - 1
      if (left === 0) this.#reads.delete(bucket)
      else this.#reads.set(bucket, left)
    }
  }
}
