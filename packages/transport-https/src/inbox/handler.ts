/**
 * The inbox as a web-standard handler, `(Request) => Promise<Response>`: the HTTP steps of
 * PROFILE §6 (method, per-address limit, Content-Type, size while streaming), then the one
 * receive pipeline (`createReceiver` / `receive` from `@agentmsg/core`), whose outcome becomes
 * 202 or the error. Isomorphic: no Node built-ins, so it runs under Node (see `serveInbox`),
 * Deno, Bun, workers, or any framework.
 */
import {
  createReceiver,
  type DeliveryHandler,
  type DeliveryOutcome,
  isAgentMsgError,
  parseAgentId,
  type Receiver,
} from '@agentmsg/core'
import { MAX_BODY_BYTES } from './body.js'
import { defaultCapabilities } from './capabilities.js'
import { ClientLimits } from './client-limits.js'
import { isJsonContentType } from './content-type.js'
import { preflightReply } from './cors.js'
import {
  type ExchangeHandler,
  HANDLE_EXCHANGE,
  type InboxExchange,
  webExchange,
} from './exchange.js'
import { type RateLimit, TokenBuckets } from './rate-limit.js'
import { acceptedReply, errorReply, type HttpReply, jsonReply, toResponse } from './responses.js'
import type {
  InboxCloseOptions,
  InboxHandler,
  InboxHandlerOptions,
  InboxRequestInfo,
} from './types.js'

export { MAX_BODY_BYTES }

const WELL_KNOWN = '/.well-known/agentmsg/'
const GET_METHODS = 'GET, HEAD, OPTIONS'
const POST_METHODS = 'POST, OPTIONS'

function limit(given: Partial<RateLimit> | undefined, perMinute: number, burst: number): RateLimit {
  return { perMinute: given?.perMinute ?? perMinute, burst: given?.burst ?? burst }
}

function normalizeBasePath(path = ''): string {
  const trimmed = path.replace(/\/+$/, '')
  if (trimmed !== '' && !trimmed.startsWith('/')) {
    throw new TypeError(`basePath must start with "/": ${JSON.stringify(path)}`)
  }
  return trimmed
}

/** The receiver a standalone inbox builds from its own options. */
function ownReceiver(o: InboxHandlerOptions, onError: (error: unknown) => void): Receiver {
  if (typeof o.onMessage !== 'function') throw new TypeError('onMessage is required')
  if (!o.resolver) throw new TypeError('resolver is required')
  const limits = o.limits ?? {}
  return createReceiver({
    agentId: o.agentId,
    resolver: o.resolver,
    onMessage: o.onMessage,
    onError,
    ...(o.topics !== undefined ? { topics: o.topics } : {}),
    ...(o.storage !== undefined ? { storage: o.storage } : {}),
    ...(o.replayGuard !== undefined ? { replayGuard: o.replayGuard } : {}),
    ...(o.authLevels !== undefined ? { authLevels: o.authLevels } : {}),
    ...(o.errorReplies !== undefined ? { errorReplies: o.errorReplies } : {}),
    ...(o.opener !== undefined ? { opener: o.opener } : {}),
    ...(o.identityOf !== undefined ? { identityOf: o.identityOf } : {}),
    ...(o.transitionMs !== undefined ? { transitionMs: o.transitionMs } : {}),
    ...(o.now !== undefined ? { now: o.now } : {}),
    ...(limits.maxQueue !== undefined ? { maxQueue: limits.maxQueue } : {}),
    ...(limits.queueRetryAfter !== undefined ? { queueRetryAfter: limits.queueRetryAfter } : {}),
    ...(limits.concurrency !== undefined ? { concurrency: limits.concurrency } : {}),
  })
}

/**
 * Create the inbox of one agent: `POST {basePath}/.well-known/agentmsg/inbox`, plus `GET` of
 * its identity and capabilities documents and their CORS preflights.
 *
 * The inbox keeps PROFILE §6's HTTP steps: method → per-address limit (before the body is
 * read) → Content-Type → size while streaming. The rest — I-JSON parse, validation and
 * addressee, Idempotency-Key, canonical size, date window and TTL, signatures, duplicate id,
 * per-sender limit (the inbox's buckets), auth level, persist — is the receive pipeline's,
 * whose outcome the inbox answers: 202, or the refusal's status (with `Retry-After`).
 *
 * @example
 * const inbox = createInboxHandler({
 *   agentId: 'https://bob.example',
 *   identityDocument: doc,
 *   resolver: createKeyResolver({ fetchIdentity, keyStore }),
 *   storage,
 *   onMessage: async (message, { level, knownContact }) => { … },
 * })
 * // or, sharing an agent's receiver: createInboxHandler({ agentId, receive: receiver.receive })
 * // Node: await serveInbox(inbox, { port: 443, tls: { cert, key } })
 * // Hono: app.mount('/', inbox.fetch)
 * // Deno: Deno.serve((req, info) => inbox.fetch(req, { clientAddress: info.remoteAddr.hostname }))
 */
export function createInboxHandler(options: InboxHandlerOptions): InboxHandler {
  return new Inbox(options)
}

class Inbox implements InboxHandler, ExchangeHandler {
  readonly #o: InboxHandlerOptions
  readonly #onError: (error: unknown) => void
  /** The receiver this inbox built and owns (standalone), else undefined. */
  readonly #receiver: Receiver | undefined
  readonly #deliver: DeliveryHandler
  readonly #clients: ClientLimits
  readonly #perSender: TokenBuckets
  readonly #perSenderLimit: RateLimit
  readonly #closedRetryAfter: number
  readonly #bodyTimeoutMs: number
  readonly #paths: { inbox: string; identity: string; capabilities: string }
  readonly ready: Promise<void>
  #closed = false
  /** Deliveries handed to the receiver and not yet answered. */
  #delivering = 0
  #idle: Array<() => void> = []

  constructor(o: InboxHandlerOptions) {
    parseAgentId(o.agentId, 'agentId')
    this.#o = o
    this.#onError = o.onError ?? ((error) => console.error('agentmsg inbox:', error))
    if (o.receive !== undefined) {
      if (typeof o.receive !== 'function') throw new TypeError('receive must be a function')
      this.#receiver = undefined
      this.#deliver = o.receive
    } else {
      this.#receiver = ownReceiver(o, this.#onError)
      this.#deliver = this.#receiver.receive
    }
    this.ready = this.#receiver?.ready ?? Promise.resolve()
    const now = o.now ?? Date.now
    const limits = o.limits ?? {}
    const maxKeys = limits.maxTrackedKeys ?? 100_000
    this.#clients = new ClientLimits(
      {
        ...limits,
        ...(o.trustedProxies !== undefined ? { trustedProxies: o.trustedProxies } : {}),
        now,
      },
      'agentmsg inbox',
    )
    this.#perSenderLimit = limit(limits.perSender, 60, 20)
    this.#perSender = new TokenBuckets(this.#perSenderLimit, now, maxKeys)
    this.#closedRetryAfter = limits.queueRetryAfter ?? 5
    this.#bodyTimeoutMs = limits.bodyTimeoutMs ?? 30_000
    const base = normalizeBasePath(o.basePath) + WELL_KNOWN
    this.#paths = {
      inbox: `${base}inbox`,
      identity: `${base}identity`,
      capabilities: `${base}capabilities`,
    }
  }

  get pending(): number {
    return this.#receiver ? this.#receiver.pending : this.#delivering
  }

  /** Bound, so it can be passed around alone: `app.mount('/', inbox.fetch)`. */
  readonly fetch = async (request: Request, info?: InboxRequestInfo): Promise<Response> =>
    toResponse(await this[HANDLE_EXCHANGE](webExchange(request, info, this.#bodyTimeoutMs)))

  async [HANDLE_EXCHANGE](x: InboxExchange): Promise<HttpReply> {
    try {
      const path = x.path
      if (path === this.#paths.inbox) return await this.#inbox(x)
      if (path === this.#paths.identity) {
        return this.#document(x, () => {
          const doc = this.#o.identityDocument
          return typeof doc === 'function' ? doc() : doc
        })
      }
      if (path === this.#paths.capabilities) return this.#document(x, () => this.#capabilities())
      x.discardBody()
      return errorReply('not_found', `nothing here; the inbox is POST ${this.#paths.inbox}`)
    } catch (error) {
      return this.#failure(error)
    }
  }

  async idle(): Promise<void> {
    if (this.#receiver) return this.#receiver.idle()
    if (this.#delivering === 0) return
    await new Promise<void>((resolve) => this.#idle.push(resolve))
  }

  async close(options: InboxCloseOptions = {}): Promise<void> {
    this.#closed = true
    if (this.#receiver) return this.#receiver.close(options)
    if (options.drain === false || this.#delivering === 0) return
    await new Promise<void>((resolve) => this.#idle.push(resolve))
  }

  async #inbox(x: InboxExchange): Promise<HttpReply> {
    // 1. Method.
    if (x.method !== 'POST') {
      if (x.method === 'OPTIONS') return preflightReply(POST_METHODS)
      return this.#methodNotAllowed(x, POST_METHODS)
    }
    if (this.#closed) {
      x.discardBody()
      return errorReply('unavailable', 'this inbox is shutting down', {
        retryAfter: this.#closedRetryAfter,
      })
    }
    // 2. Per-address limit, before a byte of the body is read. No address while limiting is
    // on throws (500, reported): never one bucket shared by everyone (PROFILE §6).
    const bucket = this.#clients.bucket(x.clientAddress, () => x.header('x-forwarded-for'))
    const wait = this.#clients.take(bucket)
    if (wait > 0) {
      x.discardBody()
      return errorReply('rate_limited', `too many requests from this address; retry in ${wait} s`, {
        retryAfter: wait,
      })
    }
    // 3. Content-Type.
    if (!isJsonContentType(x.header('content-type'))) {
      x.discardBody()
      return errorReply(
        'unsupported_media_type',
        'Content-Type must be application/json (charset utf-8)',
      )
    }
    // 4. Size, while streaming; a declared length over the cap is refused without reading.
    const declared = x.header('content-length')
    if (declared !== null && Number(declared) > MAX_BODY_BYTES) {
      x.discardBody()
      return tooLarge()
    }
    // Bodies read at once: 8 per address bucket (429), 128 overall (503), PROFILE §6.
    const release = this.#clients.startRead(bucket)
    if (typeof release !== 'function') {
      x.discardBody()
      return release
    }
    let bytes
    try {
      bytes = await x.readBody(MAX_BODY_BYTES)
    } finally {
      release()
    }
    if (bytes === undefined) return tooLarge()
    // 5. to the end: the receive pipeline (PROFILE §6), the per-sender limit being this inbox's.
    const outcome = await this.#handOver(bytes, x.header('idempotency-key'), bucket)
    if (outcome.status !== 'refused') return acceptedReply(outcome.messageId)
    const { error } = outcome
    return errorReply(error.code, error.message, { retryAfter: error.retryAfter })
  }

  async #handOver(
    body: Uint8Array,
    idempotencyKey: string | null,
    bucket: string | undefined,
  ): Promise<DeliveryOutcome> {
    this.#delivering++
    try {
      return await this.#deliver({
        body,
        transport: 'https',
        idempotencyKey,
        perSender: (from) => this.#perSender.take(from),
        // Its id counts against this bucket's share of the replay guard (PROFILE §6).
        ...(bucket !== undefined ? { bucket } : {}),
      })
    } finally {
      if (--this.#delivering === 0) for (const resolve of this.#idle.splice(0)) resolve()
    }
  }

  #document(x: InboxExchange, get: () => unknown): HttpReply {
    const method = x.method
    if (method === 'OPTIONS') return preflightReply(GET_METHODS)
    if (method !== 'GET' && method !== 'HEAD') return this.#methodNotAllowed(x, GET_METHODS)
    const doc = get()
    if (doc === undefined)
      return errorReply('not_found', 'this agent publishes no identity document')
    const maxAge = this.#o.identityMaxAge ?? 300
    return jsonReply(200, doc, { 'cache-control': `max-age=${maxAge}` }, method === 'HEAD')
  }

  #capabilities(): unknown {
    const given = this.#o.capabilities
    if (given !== undefined) return typeof given === 'function' ? given() : given
    const doc = this.#o.identityDocument
    const identity = typeof doc === 'function' ? doc() : doc
    return defaultCapabilities({
      agentId: this.#o.agentId,
      perSender: this.#perSenderLimit,
      encryption: this.#o.encryption ?? (!this.#o.receive && this.#o.opener ? ['sealed_box'] : []),
      relay: identity?.relay,
    })
  }

  #methodNotAllowed(x: InboxExchange, allow: string): HttpReply {
    x.discardBody()
    return errorReply('method_not_allowed', `${x.method} is not allowed here; allowed: ${allow}`, {
      headers: { allow },
    })
  }

  #failure(error: unknown): HttpReply {
    if (isAgentMsgError(error) && error.code !== 'internal_error') {
      return errorReply(error.code, error.message, { retryAfter: error.retryAfter })
    }
    this.#onError(error)
    // Nothing about the cause goes on the wire: no stack, no message.
    return errorReply('internal_error', 'internal error')
  }
}

function tooLarge(): HttpReply {
  return errorReply(
    'payload_too_large',
    `the request body exceeds ${MAX_BODY_BYTES} bytes (1 MiB + 64 KiB)`,
    {
      headers: { connection: 'close' },
    },
  )
}
