/** Options and contracts of the inbox handler. */
import type {
  AuthLevel,
  AuthLevelTracker,
  IdentityDocument,
  JsonObject,
  KeyResolver,
  KeySource,
  Message,
  ReplayGuard,
  Storage,
  UnsignedMessage,
} from '@agentmsg/core'
import type { RateLimit } from './rate-limit.js'

/** What the application learns about an accepted message besides the message itself. */
export interface InboxMessageInfo {
  /** Authentication level of the best verified signature (PROFILE §5). */
  level: AuthLevel
  /** Where that signature's key came from. */
  source: KeySource
  /** The full key id of that signature. */
  keyId: string
  /**
   * Whether the sender is a known contact (pinned, introduced, or accepted before): a level
   * says how strongly a key is bound to an id, not whether you know the sender (PROFILE §5).
   */
  knownContact: boolean
  transport: 'https'
}

/** Where an error phase message should go; the caller signs and delivers it. */
export interface ErrorReplyTarget {
  agent: string
  /** The agent's inbox, taken from its own identity document (never from the message). */
  inbox?: string
  /** Relays from the verified message's `from.relays`: how a did:key sender is reached. */
  relays?: string[]
}

/** Sends the error phase messages of PROFILE §7 on the inbox's behalf. */
export interface ErrorReplySender {
  /**
   * Sign `message` (built with `createErrorMessage`, unsigned) as this agent and deliver it to
   * `to`. Failures go to the handler's `onError`.
   */
  send(message: UnsignedMessage, to: ErrorReplyTarget): Promise<void>
}

/** Limits of the inbox (PROFILE §6). */
export interface InboxLimits {
  /**
   * Per client address (IPv6 per /64), checked before the body is read.
   * @default { perMinute: 600, burst: 100 }
   */
  perAddress?: Partial<RateLimit>
  /**
   * Per verified sender (`from.agent`); stated in the capabilities document.
   * @default { perMinute: 60, burst: 20 }
   */
  perSender?: Partial<RateLimit>
  /**
   * Most messages accepted and not yet processed. When full, the inbox answers 503
   * `unavailable` with `Retry-After` instead of accepting: memory stays bounded.
   * @default 1000
   */
  maxQueue?: number
  /** `Retry-After` seconds sent when the queue is full or the inbox is closing. @default 5 */
  queueRetryAfter?: number
  /**
   * How many `onMessage` calls run at once. 1 keeps each sender's messages in arrival order.
   * @default 1
   */
  concurrency?: number
  /**
   * Most request bodies being received at once (each held up to 1 MiB + 64 KiB). Past it the
   * inbox answers 503 `unavailable` before reading, so slow senders cannot pile up memory.
   * @default 128
   */
  maxConcurrentReads?: number
  /** Most addresses and senders whose rate-limit state is kept (least recently seen dropped). @default 100_000 */
  maxTrackedKeys?: number
}

/** Options for {@link createInboxHandler}. */
export interface InboxHandlerOptions {
  /** This agent's id. Messages must be addressed to it (`to.agent`), or to one of `topics`. */
  agentId: string
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
  capabilities?: JsonObject | (() => JsonObject)
  /** Finds signing keys (e.g. `createKeyResolver(...)` from `@agentmsg/core`). */
  resolver: KeyResolver
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
   * to `onError`; the message is not offered again.
   */
  onMessage: (message: Message, info: InboxMessageInfo) => Promise<void>
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
   * The connection's peer address, for the per-address limit. Requests without one share a
   * single bucket, so adapters should always pass it.
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

/** A web-standard inbox: mount `fetch` in any server (see `serveInbox` for Node). */
export interface InboxHandler {
  /** Answer one request (inbox, identity, capabilities, CORS preflight). */
  fetch(request: Request, info?: InboxRequestInfo): Promise<Response>
  /** Refuse new messages (503) and, by default, wait for the queue to drain. */
  close(options?: InboxCloseOptions): Promise<void>
  /** Messages accepted and not yet processed. */
  readonly pending: number
  /** Settles once messages persisted by an earlier run have been queued again. */
  readonly ready: Promise<void>
}
