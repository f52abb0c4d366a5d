/**
 * The inbox as a web-standard handler, `(Request) => Promise<Response>`: the HTTP steps of
 * PROFILE §6 (method, per-address limit, Content-Type, size while streaming), then the one
 * receive pipeline (`createReceiver` / `receive` from `@agentmsg/core`), whose outcome becomes
 * 202 or the error. Isomorphic: no Node built-ins, so it runs under Node (see `serveHttps`),
 * Deno, Bun, workers, or any framework.
 */
import {
  type DeliveryHandler,
  type DeliveryOutcome,
  isAgentMsgError,
  PROFILE,
  parseAgentId,
  type Receiver,
} from '@agentmsg/core'
import { readBody, traced } from '@agentmsg/core/http'
import { createReceiver } from '@agentmsg/core/receive'
import {
  acceptedReply,
  ClientLimits,
  discardBody,
  errorReply,
  type HttpReply,
  isJsonContentType,
  jsonReply,
  preflightReply,
  TokenBuckets,
  toResponse,
} from '@agentmsg/core/server'
import { defaultCapabilities } from './defaults.js'
import type {
  InboxCloseOptions,
  InboxHandler,
  InboxHandlerOptions,
  InboxRequestInfo,
} from './types.js'
import { webhookChallenge } from './webhook-verify.js'

const WELL_KNOWN = '/.well-known/agentmsg/'
const REPLY = Symbol.for('agentmsg.reply')
const GET_METHODS = 'GET, HEAD, OPTIONS'
const POST_METHODS = 'POST, OPTIONS'

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
 * // Node: await serveHttps(inbox, { port: 443, tls: { cert, key } })
 * // Deno: Deno.serve((req, info) => inbox.fetch(req, { clientAddress: info.remoteAddr.hostname }))
 */
export function createInboxHandler(options: InboxHandlerOptions): InboxHandler {
  return new Inbox(options)
}

/** The path of a serialized absolute URL, as `new URL(url).pathname` gives it. */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const end = url.slice(start).search(/[?#]/)
  return end < 0 ? url.slice(start) : url.slice(start, start + end)
}

class Inbox implements InboxHandler {
  readonly #o: InboxHandlerOptions
  readonly #onError: (error: unknown) => void
  /** The receiver this inbox built and owns (standalone), else undefined. */
  readonly #receiver: Receiver | undefined
  readonly #deliver: DeliveryHandler
  readonly #clients: ClientLimits
  readonly #perSender: TokenBuckets
  readonly #perSenderLimit: { perMinute: number; burst: number }
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
    if (o.receive) this.#deliver = o.receive
    else {
      // createReceiver checks the standalone fields it requires (`resolver`, `onMessage`).
      const { maxQueue, queueRetryAfter, concurrency } = o.limits ?? {}
      this.#receiver = createReceiver({
        ...(o as Parameters<typeof createReceiver>[0]),
        onError: this.#onError,
        maxQueue,
        queueRetryAfter,
        concurrency,
      })
      this.#deliver = this.#receiver.receive
    }
    this.ready = this.#receiver?.ready ?? Promise.resolve()
    const now = o.now ?? Date.now
    const limits = o.limits ?? {}
    const trustedProxies = o.trustedProxies
    this.#clients = new ClientLimits({ ...limits, trustedProxies, now }, 'agentmsg inbox')
    const { perMinute = PROFILE.perSender.perMinute, burst = PROFILE.perSender.burst } =
      limits.perSender ?? {}
    this.#perSenderLimit = { perMinute, burst }
    this.#perSender = new TokenBuckets(this.#perSenderLimit, now, limits.maxTrackedKeys)
    this.#closedRetryAfter = limits.queueRetryAfter ?? 5
    this.#bodyTimeoutMs = limits.bodyTimeoutMs ?? PROFILE.bodyTimeoutMs
    const trimmed = (o.basePath ?? '').replace(/\/+$/, '')
    if (trimmed !== '' && !trimmed.startsWith('/')) {
      throw new TypeError(`basePath must start with "/": ${JSON.stringify(o.basePath)}`)
    }
    const base = trimmed + WELL_KNOWN
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
    toResponse(await this[REPLY](request, info))

  /** The answer as plain data: what the Node adapter writes without building a `Response`. */
  async [REPLY](request: Request, info?: InboxRequestInfo): Promise<HttpReply> {
    const clientAddress = info?.clientAddress
    try {
      const path = pathOf(request.url)
      if (path === this.#paths.inbox) {
        return await traced('agentmsg.inbox', 'SERVER', request, this.#post, request, clientAddress)
      }
      if (path === this.#paths.identity) {
        return this.#document(request, () => {
          const doc = this.#o.identityDocument
          return typeof doc === 'function' ? doc() : doc
        })
      }
      if (path === this.#paths.capabilities) {
        return this.#document(request, () => this.#capabilities())
      }
      discardBody(request)
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

  readonly #post = (_: unknown, request: Request, address?: string) => this.#inbox(request, address)
  async #inbox(request: Request, clientAddress: string | undefined): Promise<HttpReply> {
    const { method, headers } = request
    // 1. Method.
    if (method !== 'POST') {
      if (method === 'OPTIONS') return preflightReply(POST_METHODS)
      return this.#methodNotAllowed(request, POST_METHODS)
    }
    const refuse = (reply: HttpReply) => (discardBody(request), reply)
    if (this.#closed) {
      return refuse(
        errorReply('unavailable', 'this inbox is shutting down', {
          retryAfter: this.#closedRetryAfter,
        }),
      )
    }
    // 2. Per-address limit, before a byte of the body is read. No address while limiting is
    // on throws (500, reported): never one bucket shared by everyone (PROFILE §6).
    const bucket = this.#clients.bucket(clientAddress, () => headers.get('x-forwarded-for'))
    const wait = this.#clients.take(bucket)
    if (wait > 0) {
      const message = `too many requests from this address; retry in ${wait} s`
      return refuse(errorReply('rate_limited', message, { retryAfter: wait }))
    }
    // 3. Content-Type.
    if (!isJsonContentType(headers.get('content-type'))) {
      const message = 'Content-Type must be application/json (charset utf-8)'
      return refuse(errorReply('unsupported_media_type', message))
    }
    // 4. Size, while streaming; a declared length over the cap is refused without reading.
    if (Number(headers.get('content-length')) > PROFILE.maxBodyBytes) return refuse(tooLarge())
    // Bodies read at once: 8 per address bucket (429), 128 overall (503), PROFILE §6.
    const release = this.#clients.startRead(bucket)
    if (typeof release !== 'function') return refuse(release)
    let bytes: Uint8Array | undefined
    try {
      bytes = await readBody(request, {
        maxBytes: PROFILE.maxBodyBytes,
        timeoutMs: this.#bodyTimeoutMs,
        failure: 'invalid_format',
      })
    } finally {
      release()
    }
    if (bytes === undefined) return tooLarge()
    const challenge = webhookChallenge(bytes)
    if (challenge !== undefined) return jsonReply(200, { challenge })
    // 5. to the end: the receive pipeline (PROFILE §6), the per-sender limit being this inbox's.
    const outcome = await this.#handOver(bytes, headers.get('idempotency-key'), bucket)
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

  #document(request: Request, get: () => unknown): HttpReply {
    const method = request.method
    if (method === 'OPTIONS') return preflightReply(GET_METHODS)
    if (method !== 'GET' && method !== 'HEAD') return this.#methodNotAllowed(request, GET_METHODS)
    const doc = get()
    if (doc === undefined) {
      return errorReply('not_found', 'this agent publishes no identity document')
    }
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

  #methodNotAllowed(request: Request, allow: string): HttpReply {
    discardBody(request)
    const message = `${request.method} is not allowed here; allowed: ${allow}`
    return errorReply('method_not_allowed', message, { headers: { allow } })
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
  const message = `the request body exceeds ${PROFILE.maxBodyBytes} bytes (1 MiB + 64 KiB)`
  return errorReply('payload_too_large', message, { headers: { connection: 'close' } })
}
