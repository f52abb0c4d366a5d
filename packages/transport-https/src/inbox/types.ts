/** Options and contracts of the inbox handler. */

import type {
  DeliveryHandler,
  IdentityDocument,
  JsonValue,
  KeyResolver,
  Message,
  ReceivedInfo,
  Storage,
} from '@agentmsg/core'
import type {
  AuthLevelTracker,
  createReceiver,
  ErrorReplySender,
  ReplayGuard,
} from '@agentmsg/core/receive'
import type { RateLimit } from '@agentmsg/core/server'

/** Limits of the inbox (PROFILE §6). */
export interface InboxLimits {
  /**
   * Per client address (IPv6 per /64), before the body is read. `false` turns all per-address
   * limiting off: needed when the adapter passes no `clientAddress` (a proxy in front should
   * limit then). With it on, a request without an address is answered 500 and reported
   * (`MissingClientAddressError`), never put in a shared bucket (PROFILE §6).
   * @default PROFILE.perAddress (600 a minute, burst 100)
   */
  perAddress?: Partial<RateLimit> | false
  /** Per verified sender (`from.agent`), stated in capabilities. @default PROFILE.perSender */
  perSender?: Partial<RateLimit>
  /** Standalone: messages accepted, not yet processed; past it 503 `Retry-After`. @default 1000 */
  maxQueue?: number
  /** `Retry-After` seconds sent when the queue is full or the inbox is closing. @default 5 */
  queueRetryAfter?: number
  /** Standalone only: `onMessage` calls at once; 1 keeps arrival order. @default 1 */
  concurrency?: number
  /** Bodies read at once (each up to 1 MiB + 64 KiB); past it 503 before reading. @default 128 */
  maxConcurrentReads?: number
  /** Bodies read at once per address bucket; past it 429 (PROFILE §6). @default 8 */
  maxReadsPerAddress?: number
  /** A body must be in this long after its headers, else 400 (PROFILE §6). @default 30 s */
  bodyTimeoutMs?: number
  /** Addresses and senders whose rate-limit state is kept (LRU). @default 100_000 */
  maxTrackedKeys?: number
}

/**
 * Options for {@link createInboxHandler}: each body goes to `receive` (an agent's
 * `Receiver.receive`), or to a receiver the inbox builds from the standalone fields.
 */
export interface InboxHandlerOptions {
  /** This agent's id. Messages must be addressed to it (`to.agent`), or to one of `topics`. */
  agentId: string
  /** The receive pipeline (`createReceiver(…).receive`); standalone fields are then ignored. */
  receive?: DeliveryHandler
  /** Relay topics this agent subscribed to, accepted in `to.topic`. @default [] */
  topics?: readonly string[]
  /** Served at `GET …/identity` (a function: asked per request, so rotation shows); absent: 404. */
  identityDocument?: IdentityDocument | (() => IdentityDocument | undefined)
  /** `Cache-Control: max-age` of the identity document, in seconds. @default 300 */
  identityMaxAge?: number
  /** Served at `GET …/capabilities`. @default PROFILE §10's from `agentId`, `limits`, `relay` */
  capabilities?: Record<string, JsonValue> | (() => Record<string, JsonValue>)
  /**
   * Schemes the receiver opens, advertised in capabilities (PROFILE §10): a sender told
   * `sealed_box` seals to us. @default `['sealed_box']` standalone with `opener`, else none
   */
  encryption?: readonly string[]
  /** Standalone: opens sealed bodies to this agent (PROFILE §8); absent: they are refused. */
  opener?: Parameters<typeof createReceiver>[0]['opener']
  /** Finds signing keys (`createKeyResolver(…)`). Required without `receive`. */
  resolver?: KeyResolver
  /** Date window, TTL and duplicate ids (PROFILE §6). @default new ReplayGuard({ storage, now }) */
  replayGuard?: ReplayGuard
  /** Authentication levels (PROFILE §5). @default new AuthLevelTracker({ storage, now }) */
  authLevels?: AuthLevelTracker
  /**
   * Accepted messages are stored before the 202 and deleted once `onMessage` settled; left-over
   * ones are queued again on start, so a crash loses nothing. @default memory only
   */
  storage?: Storage
  /** The application, after the 202, from a bounded queue; a rejection goes to `onError`. */
  onMessage?: (message: Message, info: ReceivedInfo) => Promise<void>
  /** Failures nobody else sees (`onMessage` rejections, answers 500, …). @default console.error */
  onError?: (error: unknown) => void
  /** Rate limits and queue bound. @default see `InboxLimits` */
  limits?: InboxLimits
  /** Reverse proxies (addresses, CIDR) whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[]
  /** Path of this agent's base URL (`/agents/bob` for `https://host/agents/bob`). @default '' */
  basePath?: string
  /** Sends PROFILE §7 error phase messages (at most one a minute per peer). @default none */
  errorReplies?: ErrorReplySender
  /** An agent's identity document, for error replies. @default `resolver.document(agent)` */
  identityOf?: (agent: string) => Promise<IdentityDocument | undefined>
  /** Transition period of retired keys, in ms (PROFILE §4). @default 14 days */
  transitionMs?: number
  /** The clock, in epoch ms. @default Date.now */
  now?: () => number
}

/** Per-request facts the server adapter knows and the Request does not. */
export interface InboxRequestInfo {
  /** The peer's address for the per-address limits; without it 500 while on (PROFILE §6). */
  clientAddress?: string
}

/** Options for {@link InboxHandler.close}. */
export interface InboxCloseOptions {
  /** Wait for every accepted message; `false`: at once, the rest stays stored. @default true */
  drain?: boolean
}

/** A web-standard inbox: mount `fetch` in any server (`serveHttps` on Node). */
export interface InboxHandler {
  /** Answer one request (inbox, identity, capabilities, CORS preflight). */
  fetch(request: Request, info?: InboxRequestInfo): Promise<Response>
  /** Refuse new messages (503), by default wait for the queue (with `receive`: the answers). */
  close(options?: InboxCloseOptions): Promise<void>
  /** Messages accepted, not yet processed (with `receive`: deliveries not yet answered). */
  readonly pending: number
  /**
   * Resolves once `pending` is 0 (at once when it is). A Worker's request ends with its answer,
   * and the message is handled after the 202 (PROFILE §6): `ctx.waitUntil(inbox.idle())`.
   */
  idle(): Promise<void>
  /** Settles once messages persisted by an earlier run were queued again. */
  readonly ready: Promise<void>
}
