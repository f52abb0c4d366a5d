/** Options and the public shape of the relay handler (PROFILE §9). */
import type { KeyResolver } from '@agentmsg/core'
import type { AddressPolicy, Clock, RateLimit } from '@agentmsg/transport-https'
import type { MailboxEntry, RelayStore } from '../store/types.js'

/** Rate limits of PROFILE §6, as the relay applies them. */
export interface RelayLimits {
  /**
   * Per client address (IPv6 per /64), before any body is read. `false` turns every
   * per-address limit off (rate, `maxReadsPerAddress`, the nonce memory's per-address shares):
   * required, and only meant, for an adapter that passes no client address; with limiting on,
   * such a request is answered 500 and reported to `onError` (PROFILE §6: never one shared
   * bucket). @default 600/min, burst 100
   */
  perAddress?: Partial<RateLimit> | false
  /** Request bodies read at once from one address bucket; a ninth → 429. @default 8 */
  maxReadsPerAddress?: number
  /** Request bodies read at once overall; past it → 503. @default 128 */
  maxConcurrentReads?: number
  /** Per verified sender (`from.agent`) on publish. @default 60/min, burst 20 */
  perSender?: Partial<RateLimit>
  /** Most buckets tracked per limit. @default 100_000 */
  maxTrackedKeys?: number
  /** Open SSE and WebSocket streams per agent (PROFILE §9); beyond → 429 or close 1013. @default 4 */
  streamsPerAgent?: number
  /** Subscriptions per agent (PROFILE §9); beyond → 429. @default 16 */
  subscriptionsPerAgent?: number
}

/** Webhook push settings. */
export interface RelayWebhookOptions {
  /** Timeout of the `webhook_verify` round trip. @default 10_000 */
  verifyTimeoutMs?: number
  /** Timeout of one delivery attempt. @default 30_000 */
  attemptTimeoutMs?: number
  /** Retries stop this long after the first attempt. @default 24 h */
  deadlineMs?: number
  /** Jitter source of the retry schedule, in [0, 1). @default Math.random */
  random?: () => number
  /** Clock of the retry schedule. @default the real clock */
  clock?: Clock
  /** Most deliveries in flight per webhook subscription. @default 64 */
  maxInFlight?: number
}

/** Options of {@link createRelayHandler}. */
export interface RelayHandlerOptions {
  /**
   * The relay's public base URL (`https://relay.example`). Normalised as an agent URL; used in
   * trace `by`, as the `@target-uri` prefix of agent auth and in the WebSocket auth line.
   * Never taken from a request's `Host`.
   */
  baseUrl: string
  store: RelayStore
  /**
   * Resolves senders' keys. @default createKeyResolver with a Node identity fetcher bound by
   * `addressPolicy` (and `ca`)
   */
  resolver?: KeyResolver
  /** Outbound address rules for identity documents and webhooks. @default public unicast only */
  addressPolicy?: AddressPolicy
  /** Extra CA certificates (PEM) trusted for outbound https (development certificates). */
  ca?: string | string[]
  /** The fetch used for webhooks. @default createNodeFetch({ ca, addressPolicy }) */
  fetch?: typeof fetch
  limits?: RelayLimits
  /** Proxies whose `X-Forwarded-For` is believed (addresses or CIDR ranges). */
  trustedProxies?: string[]
  /** How long an unacknowledged message is kept; at least (and by default) 7 days. */
  retentionMs?: number
  /** Clock, epoch ms. @default Date.now */
  now?: () => number
  /** Unexpected errors (store failures, bugs). @default console.error */
  onError?: (error: unknown) => void
  /** SSE comment-line interval. @default 15_000 */
  heartbeatMs?: number
  /** How often expired entries are deleted. @default 60_000 */
  expireIntervalMs?: number
  /** Bytes a stream connection may have waiting before it is dropped. @default 4 MiB */
  maxStreamBufferBytes?: number
  /** A stream whose client read nothing for this long while data waits is dropped. @default 60_000 */
  stallTimeoutMs?: number
  /** `Retry-After` seconds when a mailbox, a sender's share of it or the relay is full. @default 60 */
  mailboxFullRetryAfter?: number
  webhook?: RelayWebhookOptions
  /** Told what the relay refuses, stores and delivers: metrics and logs (relay-metrics.ts, relay-log.ts). */
  observer?: RelayObserver
  /**
   * `GET /readyz`: a store check slower than `timeoutMs` fails it; an answer is reused for
   * `cacheMs` (one check at a time whatever the probe rate). @default 2000 and 1000
   */
  readyCheck?: { timeoutMs?: number; cacheMs?: number }
}

/** PROFILE §6 limit, or PROFILE §9 cap, that refused a request with 429 `rate_limited`. */
export type RateLimitScope = 'address' | 'reads' | 'sender' | 'streams' | 'subscriptions'

/** How a message left the relay: pushed on a stream or webhook, or read with a retrieve. */
export type DeliveryMode = 'ws' | 'sse' | 'webhook' | 'retrieve'

/** A stream kind (PROFILE §9: both count against the per-agent stream cap). */
export type StreamKind = 'sse' | 'ws'

/**
 * A refused request, as an operator may see it: never its body, headers, signature or path
 * (paths name agents and messages), and the client only as its address bucket (PROFILE §6).
 */
export interface RefusedRequest {
  /** The PROFILE §6 error code. */
  code: string
  /** The HTTP status of that code (also for a WebSocket refused after the upgrade). */
  status: number
  /** The endpoint's name: publish, subscribe, unsubscribe, retrieve, acknowledge, ack, stream, ws, or unknown. */
  route: string
  method: string
  /** The client-address bucket (an IPv6 address per /64), when one is known. */
  bucket?: string
}

/**
 * What the relay reports as it runs (issue 14: metrics and logs). Every method is optional and
 * must not throw; they are called on the request path, so they must be cheap.
 */
export interface RelayObserver {
  /** A request answered with an error (4xx, 5xx), or a WebSocket refused. */
  refused?(request: RefusedRequest): void
  /** A publish answered: `accepted`, `duplicate` (202 without storing), or its error code. */
  published?(outcome: string): void
  /** Agent auth or a message signature refused (a 401 or 403 code). */
  authFailed?(code: string): void
  /** A 429 `rate_limited`, by the limit that gave it. */
  rateLimited?(scope: RateLimitScope): void
  /** Messages handed to a stream or webhook target, or returned by a retrieve. */
  delivered?(mode: DeliveryMode, count: number): void
  /** A stream opened, or one it reported before closed. */
  streamOpened?(kind: StreamKind): void
  streamClosed?(kind: StreamKind): void
  /** A store write (publish, acknowledgement) took this long from request to durable commit. */
  storeWrite?(op: 'publish' | 'ack', seconds: number): void
}

/** Where a feed sends the entries of a mailbox (an SSE stream, a WebSocket, a webhook). */
export interface FeedSink {
  /** Send one entry; never blocks. */
  send(entry: MailboxEntry): void
  /** Resolves true when the sink can take more, false when it is gone (the feed stops). */
  ready(): Promise<boolean>
}

/** A running feed: backlog after a cursor, then live entries, no gaps, no duplicates. */
export interface Feed {
  close(): void
}

/** Per-request information from the server adapter. */
export interface RelayRequestInfo {
  /** The connection's peer address (for the per-address limit). */
  clientAddress?: string | undefined
}

/** The relay as a web-standard handler, plus what the WebSocket adapter needs. */
export interface RelayServerHandler {
  /** All HTTP endpoints of PROFILE §9. Bound: may be passed around alone. */
  readonly fetch: (request: Request, info?: RelayRequestInfo) => Promise<Response>
  /** The normalised base URL. */
  readonly baseUrl: string
  /** The resolver used for message signatures and agent auth. */
  readonly resolver: KeyResolver
  /** Resolves once webhook subscriptions are loaded and their backlog is scheduled. */
  readonly ready: Promise<void>
  /** Take one token of the per-address limit; 0 when allowed, else seconds to wait. */
  admit(clientAddress: string | undefined, forwardedFor?: string | null): number
  /**
   * Stream a mailbox to `sink` from after `after`: held entries first, then live ones.
   * `onClose` runs once when the feed stops (closed, sink gone, or a store error, given; a
   * `RangeError` means `after` is not a cursor of this store).
   */
  openFeed(
    agent: string,
    after: string | undefined,
    sink: FeedSink,
    onClose?: (error?: unknown) => void,
  ): Feed
  /**
   * Take one of `agent`'s stream slots (PROFILE §9: at most `limits.streamsPerAgent` open SSE
   * and WebSocket streams per agent). Returns the function that gives it back (idempotent), or
   * undefined when the agent has every slot open: refuse the stream (WebSocket close 1013).
   * `kind`, when given, is reported to the observer (open streams by kind).
   */
  claimStream(agent: string, kind?: StreamKind): (() => void) | undefined
  /**
   * The client-address bucket of a connection (PROFILE §6), for reports; undefined when
   * per-address limiting is off or the address is unknown. Never throws.
   */
  bucketOf?(clientAddress: string | undefined, forwardedFor?: string | null): string | undefined
  /** Open streams (SSE and WebSocket) of one agent, or of every agent. */
  openStreams(agent?: string): number
  /**
   * Acknowledge (delete) a mailbox's entries with this id; returns how many. For WebSocket ack
   * frames, which get no answer: the store may commit it with its next write (AckOptions.lazy).
   */
  ack(agent: string, messageId: string, from?: string): Promise<number>
  /** Register a connection that `close()` must end (WebSocket adapters). */
  track(closer: () => void): () => void
  /**
   * Refuse new publishes (503), wait for those in flight to be stored, end streams and
   * sockets, stop timers and webhook deliveries. Does not close the store.
   */
  close(): Promise<void>
}
