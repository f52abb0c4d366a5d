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
   * Per client address (IPv6 per /64), checked before the body is read. `false` turns all
   * per-address limiting off (rate, `maxReadsPerAddress`, the replay guard's per-address
   * shares): required when the server adapter passes no `clientAddress` (then a proxy in front
   * should limit per address). With limiting on, a request without an address is answered 500
   * and reported to `onError` as a `MissingClientAddressError`, never put in a shared bucket
   * (PROFILE §6).
   * @default PROFILE.perAddress (600 a minute, burst 100)
   */
  perAddress?: Partial<RateLimit> | false
  /**
   * Per verified sender (`from.agent`); stated in the capabilities document.
   * @default PROFILE.perSender (60 a minute, burst 20)
   */
  perSender?: Partial<RateLimit>
  /**
   * Most messages accepted and not yet processed. When full, the inbox answers 503
   * `unavailable` with `Retry-After` instead of accepting: memory stays bounded. (Standalone
   * inbox only; with `receive`, the receiver's own bound applies.)
   * @default 1000
   */
  maxQueue?: number
  /** `Retry-After` seconds sent when the queue is full or the inbox is closing. @default 5 */
  queueRetryAfter?: number
  /**
   * How many `onMessage` calls run at once. 1 keeps each sender's messages in arrival order.
   * (Standalone inbox only.)
   * @default 1
   */
  concurrency?: number
  /**
   * Most request bodies being received at once (each held up to 1 MiB + 64 KiB). Past it the
   * inbox answers 503 `unavailable` before reading, so slow senders cannot pile up memory.
   * @default 128
   */
  maxConcurrentReads?: number
  /**
   * Most request bodies being received at once from one address bucket; a ninth → 429
   * `rate_limited` with `Retry-After: 1`, so one address cannot take the 128 (PROFILE §6).
   * @default 8
   */
  maxReadsPerAddress?: number
  /**
   * A body must be all in this long after its headers (PROFILE §6), else the read is abandoned
   * with 400; on Node, `serveHttps` / `getRequestListener` also close the connection then.
   * @default PROFILE.bodyTimeoutMs (30 s)
   */
  bodyTimeoutMs?: number
  /** Most addresses and senders whose rate-limit state is kept (least recently seen dropped). @default 100_000 */
  maxTrackedKeys?: number
}

/**
 * Options for {@link createInboxHandler}. The inbox keeps the HTTP steps of PROFILE §6 (method,
 * per-address limit, Content-Type, size while streaming) and hands each body to a receiver:
 * either `receive` (an agent's `Receiver.receive`, shared with its other transports), or one it
 * builds itself with `createReceiver` from the standalone fields (`resolver`, `onMessage`,
 * `storage`, …), which are then required.
 */
export interface InboxHandlerOptions {
  /** This agent's id. Messages must be addressed to it (`to.agent`), or to one of `topics`. */
  agentId: string
  /**
   * The receive pipeline to hand each message to (`createReceiver(...).receive`). When given,
   * the standalone fields below (`topics`, `resolver`, `replayGuard`, `authLevels`, `storage`,
   * `onMessage`, `errorReplies`, `identityOf`, `transitionMs`, the queue limits) are ignored.
   * @default a receiver built from the standalone fields
   */
  receive?: DeliveryHandler
  /** Relay topics this agent subscribed to, accepted in `to.topic`. @default [] */
  topics?: readonly string[]
  /**
   * Served at `GET /.well-known/agentmsg/identity`; a function is asked on each request, so a
   * rotated document is served at once. Absent: that path answers 404.
   * @default undefined
   */
  identityDocument?: IdentityDocument | (() => IdentityDocument | undefined)
  /** `Cache-Control: max-age` of the identity document, in seconds. @default 300 */
  identityMaxAge?: number
  /**
   * Served at `GET /.well-known/agentmsg/capabilities`.
   * @default the PROFILE §10 document built from `agentId`, `limits.perSender` and the identity document's `relay`
   */
  capabilities?: Record<string, JsonValue> | (() => Record<string, JsonValue>)
  /**
   * Encryption schemes the receiver behind this inbox opens, advertised in the capabilities
   * document (PROFILE §10): a sender told `sealed_box` seals to us, so only say what opens.
   * @default `['sealed_box']` for a standalone inbox given `opener`, else none
   */
  encryption?: readonly string[]
  /**
   * Opens sealed bodies addressed to this agent (PROFILE §8): its id and the seeds of its keys by
   * full key id. Standalone only. Absent: sealed bodies are refused `invalid_format`.
   */
  opener?: Parameters<typeof createReceiver>[0]['opener']
  /** Finds signing keys (e.g. `createKeyResolver(...)` from `@agentmsg/core`). Required without `receive`. */
  resolver?: KeyResolver
  /**
   * Date window, TTL and duplicate ids (PROFILE §6).
   * @default new ReplayGuard({ storage, now }) — persistent when `storage` is given
   */
  replayGuard?: ReplayGuard
  /**
   * Authentication levels per conversation and peer (PROFILE §5).
   * @default new AuthLevelTracker({ storage, now })
   */
  authLevels?: AuthLevelTracker
  /**
   * When given, each accepted message is stored before the 202 and deleted once `onMessage`
   * settled; on construction, stored messages not yet processed are queued again (even beyond
   * `maxQueue`: they were accepted), so a crash loses nothing. Keys used: `inbox/pending/…`,
   * and `replay/…`, `auth/…` by the default replay guard and auth-level tracker.
   * @default undefined (memory only)
   */
  storage?: Storage
  /**
   * The application. Runs after the 202 was answered, from a bounded queue. A rejection goes
   * to `onError`; the message is not offered again. Required without `receive`.
   */
  onMessage?: (message: Message, info: ReceivedInfo) => Promise<void>
  /**
   * Failures nobody else sees: `onMessage` rejections, error-reply delivery, storage cleanup,
   * and unexpected exceptions answered with 500.
   * @default logs with console.error
   */
  onError?: (error: unknown) => void
  /** Rate limits and queue bound. @default see {@link InboxLimits} */
  limits?: InboxLimits
  /**
   * Addresses or CIDR ranges of reverse proxies whose `X-Forwarded-For` is believed.
   * @default [] (the header is ignored)
   */
  trustedProxies?: readonly string[]
  /**
   * Path of this agent's base URL, e.g. `/agents/bob` for `https://host/agents/bob`.
   * @default '' (the well-known paths sit at the root)
   */
  basePath?: string
  /**
   * Sends error phase messages (PROFILE §7): for protocol-level problems after the 202, and
   * for signature, key and level failures of URL agents (to the inbox in their own identity
   * document). At most one a minute per peer, never in reply to an error.
   * @default undefined (no error messages are sent)
   */
  errorReplies?: ErrorReplySender
  /**
   * Looks up an agent's identity document for error replies.
   * @default `resolver.document(agent)` when the resolver has it (an `IdentityDocumentCache`)
   */
  identityOf?: (agent: string) => Promise<IdentityDocument | undefined>
  /** Transition period of retired keys, in ms (PROFILE §4). @default 14 days */
  transitionMs?: number
  /** The clock, in epoch ms. @default Date.now */
  now?: () => number
}

/** Per-request facts the server adapter knows and the Request does not. */
export interface InboxRequestInfo {
  /**
   * The connection's peer address, for the per-address limits. Required unless the inbox is
   * configured with `limits.perAddress: false`: without it such a request is answered 500 (a
   * misconfiguration), never counted in one bucket shared by everyone (PROFILE §6).
   */
  clientAddress?: string
}

/** Options for {@link InboxHandler.close}. */
export interface InboxCloseOptions {
  /**
   * Wait until every accepted message was processed. `false` starts nothing more and resolves
   * at once; messages left over stay in `storage` for the next handler.
   * @default true
   */
  drain?: boolean
}

/** A web-standard inbox: mount `fetch` in any server (`serveHttps` on Node). */
export interface InboxHandler {
  /** Answer one request (inbox, identity, capabilities, CORS preflight). */
  fetch(request: Request, info?: InboxRequestInfo): Promise<Response>
  /**
   * Refuse new messages (503) and, by default, wait for the queue to drain. With `receive`,
   * waits for the deliveries handed to it to be answered; the receiver is its owner's to close.
   */
  close(options?: InboxCloseOptions): Promise<void>
  /**
   * Messages accepted and not yet processed; with `receive`, deliveries handed to it and not
   * yet answered.
   */
  readonly pending: number
  /**
   * Resolves once `pending` is 0 (at once when it is). A Worker's request ends with its answer,
   * and the message is handled after the 202 (PROFILE §6): `ctx.waitUntil(inbox.idle())`.
   */
  idle(): Promise<void>
  /**
   * Settles once messages persisted by an earlier run have been queued again (at once with
   * `receive`: the receiver restores its own).
   */
  readonly ready: Promise<void>
}
