import type { KeyResolver } from '@agentmsg/core'
import type { AddressPolicy, RateLimit } from '@agentmsg/core/server'
import type { RelayStore } from '../store/types.js'
import type { Feed, FeedSink } from './feed.js'
import type { StreamRefusal, StreamSlot } from './streams.js'
import type { RelayWebhookOptions } from './webhook.js'

/** The levels of the relay's logger (pino's), `silent` turning logs off. */
export const RELAY_LOG_LEVELS: readonly string[] = 'fatal error warn info debug trace silent'.split(
  ' ',
)

/** Rate limits of PROFILE §6 and caps of §9, as the relay applies them. */
export interface RelayLimits {
  /**
   * Per client address (IPv6 per /64), before any body is read; `false` (only for an adapter
   * that passes no client address, PROFILE §6: never one shared bucket). @default 600/min, 100
   */
  perAddress?: Partial<RateLimit> | false
  /** Bodies read at once from one address bucket; beyond → 429. @default 8 */
  maxReadsPerAddress?: number
  /** Bodies read at once overall; beyond → 503. @default 128 */
  maxConcurrentReads?: number
  /** Per verified sender on publish. @default 60/min, burst 20 */
  perSender?: Partial<RateLimit>
  /** Most buckets tracked per limit. @default 100_000 */
  maxTrackedKeys?: number
  /** Open SSE and WebSocket streams per agent; beyond → 429 or close 1013. @default 4 */
  streamsPerAgent?: number
  /** Open streams per client address bucket, whatever their agents; beyond → 429 or 1013. @default 64 */
  streamsPerAddress?: number
  /** Unsent bytes of all streams together; beyond, new streams → 503 (or 1013). @default 256 MiB */
  maxUnsentBytes?: number
  /** Subscriptions per agent; beyond → 429. @default 16 */
  subscriptionsPerAgent?: number
  /**
   * Webhook verifications per client address bucket: each dials a URL the client chose, so
   * throwaway did:keys must not make the relay dial at will; beyond → 429 before any dial.
   * PROFILE names no number. @default 10/min, burst 5
   */
  webhookVerifications?: Partial<RateLimit>
}

/** Options of {@link createRelayHandler}. */
export interface RelayHandlerOptions {
  /** The public base URL (trace `by`, agent auth's `@target-uri`); never a request's `Host`. */
  baseUrl: string
  /** Where mailboxes and subscriptions are kept. */
  store: RelayStore
  /** @default createKeyResolver with a Node identity fetcher bound by `addressPolicy` and `ca` */
  resolver?: KeyResolver
  /** Outbound address rules for identity documents and webhooks. @default public unicast only */
  addressPolicy?: AddressPolicy
  /** Extra CA certificates (PEM) trusted for outbound https (development certificates). */
  ca?: string | string[]
  /** The fetch of webhooks. @default createNodeFetch({ ca, addressPolicy }) */
  fetch?: typeof fetch
  /** The PROFILE §6 and §9 limits, each configurable. @default PROFILE's */
  limits?: RelayLimits
  /** Proxies whose `X-Forwarded-For` is believed (addresses or CIDR ranges). */
  trustedProxies?: string[]
  /** How long an unacknowledged message is kept; at least (and by default) 7 days. */
  retentionMs?: number
  /** @default Date.now */
  now?: () => number
  /** Unexpected errors (store failures, bugs). @default console.error */
  onError?: (error: unknown) => void
  /** SSE comment-line interval. @default 15_000 */
  heartbeatMs?: number
  /** How often expired entries are deleted. @default 60_000 */
  expireIntervalMs?: number
  /**
   * An SSE or WebSocket stream whose client took nothing for this long while data waits is
   * dropped (PROFILE §9). @default 60_000
   */
  stallTimeoutMs?: number
  /** `Retry-After` seconds when a mailbox, a sender's share or the relay is full. @default 60 */
  mailboxFullRetryAfter?: number
  /** Webhook delivery: timeouts, deadline, concurrency. */
  webhook?: RelayWebhookOptions
  /** Told what the relay refuses, stores and delivers (metrics, logs). */
  observer?: RelayObserver
  /**
   * Push a publish to live streams once its store decided it, while the commit runs (the 202
   * still waits for it, PROFILE §9). @default true
   */
  pushBeforeCommit?: boolean
  /** `GET /readyz`: a store check slower than `timeoutMs` fails, kept `cacheMs`. @default 2000, 1000 */
  readyCheck?: { timeoutMs?: number; cacheMs?: number }
}

/** The limit (PROFILE §6) or cap (§9) that refused a request with 429. */
export type RateLimitScope = 'address' | 'reads' | 'sender' | 'streams' | 'subscriptions'
export type DeliveryMode = 'ws' | 'sse' | 'webhook' | 'retrieve'
export type StreamKind = 'sse' | 'ws'

/** A refused request as an operator sees it: never body, headers or path; the client's bucket. */
export interface RefusedRequest {
  code: string
  status: number
  /** publish, subscribe, unsubscribe, retrieve, acknowledge, ack, stream, ws, or unknown. */
  route: string
  method: string
  bucket?: string
}

/** What the relay reports as it runs; every method optional, cheap, and never throwing. */
export interface RelayObserver {
  /** An error answer (4xx, 5xx), or a WebSocket refused. */
  refused?(request: RefusedRequest): void
  /** `accepted`, `duplicate` (202 without storing), or the error code. */
  published?(outcome: string): void
  /** Agent auth or a message signature refused (a 401 or 403 code). */
  authFailed?(code: string): void
  /** A request refused with 429, by which limit. */
  rateLimited?(scope: RateLimitScope): void
  /** Messages handed to a stream or webhook, or returned by a retrieve. */
  delivered?(mode: DeliveryMode, count: number): void
  /** An SSE or WebSocket stream opened. */
  streamOpened?(kind: StreamKind): void
  /** A stream closed. */
  streamClosed?(kind: StreamKind): void
  /** A store commit failed after its entries were pushed to streams (the publisher retries). */
  commitFailedAfterPush?(): void
  /** A store write, from request to durable commit. */
  storeWrite?(op: 'publish' | 'ack', seconds: number): void
}

/** The relay as a web-standard handler, plus what the WebSocket endpoint needs. */
export interface RelayServerHandler {
  /** Every HTTP endpoint of PROFILE §9; bound. `clientAddress`: the peer, for the limits. */
  readonly fetch: (request: Request, info?: { clientAddress?: string }) => Promise<Response>
  /** The relay's public base URL. */
  readonly baseUrl: string
  /** Resolves the keys of senders and subscribers. */
  readonly resolver: KeyResolver
  /** Resolves once webhook subscriptions are loaded. */
  readonly ready: Promise<void>
  /** Take one token of the per-address limit: 0, or the seconds to wait. */
  admit(clientAddress: string | undefined, forwardedFor?: string | null): number
  /** The client-address bucket for reports, or undefined. */
  bucketOf(clientAddress: string | undefined, forwardedFor?: string | null): string | undefined
  /** Stream a mailbox after `after`; `onClose` once it stops (a RangeError: a bad cursor). */
  openFeed(
    agent: string,
    after: string | undefined,
    sink: FeedSink,
    onClose?: (error?: unknown) => void,
  ): Feed
  /** A place for a stream of `agent` from the client-address `bucket`, or why not (PROFILE §9). */
  claimStream(agent: string, kind?: StreamKind, bucket?: string): StreamSlot | StreamRefusal
  /** Open streams of one agent, or of all. */
  openStreams(agent?: string): number
  /** Acknowledge, without an answer to wait for (a WebSocket ack frame). */
  ack(agent: string, messageId: string, from?: string): Promise<number>
  /** Register a connection that `close()` must end. */
  track(closer: () => void): () => void
  /** Refuse publishes (503), store those in flight, end streams; the store stays open. */
  close(): Promise<void>
}
