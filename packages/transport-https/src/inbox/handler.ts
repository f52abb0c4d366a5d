/**
 * The inbox as a web-standard handler, `(Request) => Promise<Response>` (STYLE pattern 6):
 * PROFILE §6's pipeline in its order, then a bounded queue to the application. Isomorphic: no
 * Node built-ins, so it runs under Node (see `serveInbox`), Deno, Bun, workers, or any framework.
 */
import {
  AuthLevelTracker,
  canonicalizeToBytes,
  invalidFormat,
  isAgentMsgError,
  parseAgentId,
  parseStrictJson,
  ReplayGuard,
  validateMessage,
  verifyMessage,
  type ErrorCode,
  type ErrorPhaseCode,
} from '@agentmsg/core'
import { AddressSet, addressBucket, clientAddress } from './address.js'
import { defaultCapabilities, MAX_MESSAGE_BYTES } from './capabilities.js'
import { isJsonContentType } from './content-type.js'
import { preflightReply } from './cors.js'
import { ErrorReplies } from './error-replies.js'
import {
  HANDLE_EXCHANGE,
  webExchange,
  type ExchangeHandler,
  type InboxExchange,
} from './exchange.js'
import { PendingStore, type Job } from './pending.js'
import { WorkQueue } from './queue.js'
import { TokenBuckets, type RateLimit } from './rate-limit.js'
import { acceptedReply, errorReply, jsonReply, toResponse, type InboxReply } from './responses.js'
import type {
  InboxCloseOptions,
  InboxHandler,
  InboxHandlerOptions,
  InboxRequestInfo,
} from './types.js'

/** Largest request body read: 1 MiB of message + 64 KiB for trace and whitespace (PROFILE §6). */
export const MAX_BODY_BYTES = 1_048_576 + 65_536

/**
 * JCS never makes a message more than 4× longer than its JSON text: strings and structure only
 * shrink, and the worst number is `1e15` (4 bytes) printed as 16 digits. Below this size the
 * canonical-size check cannot fail, so it is skipped on the hot path.
 */
const JCS_CHECK_ABOVE = MAX_MESSAGE_BYTES / 4

const WELL_KNOWN = '/.well-known/agentmsg/'
const GET_METHODS = 'GET, HEAD, OPTIONS'
const POST_METHODS = 'POST, OPTIONS'
/** Codes of failures answered 401 that also earn the sender an error phase message (PROFILE §7). */
const UNVERIFIED_REPLY = new Set<ErrorCode>(['invalid_signature', 'unknown_sender', 'key_revoked'])

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

/**
 * Create the inbox of one agent: `POST {basePath}/.well-known/agentmsg/inbox`, plus `GET` of
 * its identity and capabilities documents and their CORS preflights.
 *
 * The inbox pipeline follows PROFILE §6 exactly: method → per-address limit (before the body
 * is read) → Content-Type → size while streaming → I-JSON parse → message validation (`to`,
 * `Idempotency-Key`, canonical size) → date window and TTL → signature verification → per-sender
 * limit → duplicate id (202, not processed again) → auth level → persist → 202 → process.
 *
 * @example
 * const inbox = createInboxHandler({
 *   agentId: 'https://bob.example',
 *   identityDocument: doc,
 *   resolver: createKeyResolver({ fetchIdentity, keyStore }),
 *   storage,
 *   onMessage: async (message, { level, knownContact }) => { … },
 * })
 * // Node: await serveInbox(inbox, { port: 443, tls: { cert, key } })
 * // Hono: app.mount('/', inbox.fetch)
 * // Deno: Deno.serve((req, info) => inbox.fetch(req, { clientAddress: info.remoteAddr.hostname }))
 */
export function createInboxHandler(options: InboxHandlerOptions): InboxHandler {
  return new Inbox(options)
}

class Inbox implements InboxHandler, ExchangeHandler {
  readonly #o: InboxHandlerOptions
  readonly #now: () => number
  readonly #onError: (error: unknown) => void
  readonly #pending: PendingStore | undefined
  readonly #replay: ReplayGuard
  readonly #levels: AuthLevelTracker
  readonly #perAddress: TokenBuckets
  readonly #perSender: TokenBuckets
  readonly #perSenderLimit: RateLimit
  readonly #trusted: AddressSet
  readonly #topics: ReadonlySet<string>
  readonly #queue: WorkQueue<Job>
  readonly #replies: ErrorReplies
  readonly #queueRetryAfter: number
  readonly #maxReads: number
  readonly #paths: { inbox: string; identity: string; capabilities: string }
  readonly ready: Promise<void>
  #restored = false
  #closed = false
  #stopped = false
  #reading = 0

  constructor(o: InboxHandlerOptions) {
    parseAgentId(o.agentId, 'agentId')
    if (typeof o.onMessage !== 'function') throw new TypeError('onMessage is required')
    if (!o.resolver) throw new TypeError('resolver is required')
    this.#o = o
    this.#now = o.now ?? Date.now
    this.#onError = o.onError ?? ((error) => console.error('agentmsg inbox:', error))
    this.#pending = o.storage ? new PendingStore(o.storage, this.#now) : undefined
    const now = this.#now
    const storage = o.storage ? { storage: o.storage } : {}
    this.#replay = o.replayGuard ?? new ReplayGuard({ ...storage, now })
    this.#levels = o.authLevels ?? new AuthLevelTracker({ ...storage, now })
    const limits = o.limits ?? {}
    const maxKeys = limits.maxTrackedKeys ?? 100_000
    this.#perAddress = new TokenBuckets(limit(limits.perAddress, 600, 100), now, maxKeys)
    this.#perSenderLimit = limit(limits.perSender, 60, 20)
    this.#perSender = new TokenBuckets(this.#perSenderLimit, now, maxKeys)
    this.#trusted = new AddressSet(o.trustedProxies)
    this.#topics = new Set(o.topics ?? [])
    this.#queueRetryAfter = limits.queueRetryAfter ?? 5
    this.#maxReads = limits.maxConcurrentReads ?? 128
    this.#queue = new WorkQueue<Job>({
      capacity: limits.maxQueue ?? 1000,
      concurrency: limits.concurrency ?? 1,
      run: (job) => this.#process(job),
      onError: this.#onError,
    })
    this.#replies = new ErrorReplies({
      agentId: o.agentId,
      sender: o.errorReplies,
      resolver: o.resolver,
      identityOf: o.identityOf,
      onError: this.#onError,
      now,
    })
    const base = normalizeBasePath(o.basePath) + WELL_KNOWN
    this.#paths = {
      inbox: `${base}inbox`,
      identity: `${base}identity`,
      capabilities: `${base}capabilities`,
    }
    this.ready = this.#restore().then(
      () => {
        this.#restored = true
      },
      (error: unknown) => {
        this.#restored = true
        this.#onError(error)
      },
    )
  }

  get pending(): number {
    return this.#queue.pending
  }

  /** Bound, so it can be passed around alone: `app.mount('/', inbox.fetch)`. */
  readonly fetch = async (request: Request, info?: InboxRequestInfo): Promise<Response> =>
    toResponse(await this[HANDLE_EXCHANGE](webExchange(request, info)))

  async [HANDLE_EXCHANGE](x: InboxExchange): Promise<InboxReply> {
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

  async close(options: InboxCloseOptions = {}): Promise<void> {
    this.#closed = true
    if (options.drain === false) this.#stopped = true
    // Once stopped, nothing more will run: there is no drain to wait for.
    if (this.#stopped) {
      this.#queue.stop()
      return
    }
    await this.ready
    await this.#queue.drain()
  }

  async #inbox(x: InboxExchange): Promise<InboxReply> {
    // 1. Method.
    if (x.method !== 'POST') {
      if (x.method === 'OPTIONS') return preflightReply(POST_METHODS)
      return this.#methodNotAllowed(x, POST_METHODS)
    }
    if (this.#closed) {
      x.discardBody()
      return errorReply('unavailable', 'this inbox is shutting down', {
        retryAfter: this.#queueRetryAfter,
      })
    }
    // 2. Per-address limit, before a byte of the body is read.
    const forwarded = this.#trusted.size > 0 ? x.header('x-forwarded-for') : null
    const address = clientAddress(x.clientAddress, forwarded, this.#trusted)
    const wait = this.#perAddress.take(addressBucket(address))
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
    if (this.#reading >= this.#maxReads) {
      x.discardBody()
      return errorReply('unavailable', 'too many messages are being received at once', {
        retryAfter: 1,
      })
    }
    let bytes
    this.#reading++
    try {
      bytes = await x.readBody(MAX_BODY_BYTES)
    } finally {
      this.#reading--
    }
    if (bytes === undefined) return tooLarge()
    if (!this.#restored) await this.ready
    return this.#accept(bytes, x.header('idempotency-key'))
  }

  /** Steps 5 to the end: everything that needs the message. */
  async #accept(bytes: Uint8Array, idempotencyKey: string | null): Promise<InboxReply> {
    // 5. I-JSON. 6. Message validation, addressee, Idempotency-Key, canonical size.
    const { message, protocolError } = validateMessage(parseStrictJson(bytes))
    const to = message.to
    if (to.agent !== undefined ? to.agent !== this.#o.agentId : !this.#topics.has(to.topic)) {
      throw to.agent !== undefined
        ? invalidFormat(`this inbox is ${this.#o.agentId}'s, not ${to.agent}'s`, 'to.agent')
        : invalidFormat(`${this.#o.agentId} is not subscribed to topic ${to.topic}`, 'to.topic')
    }
    if (idempotencyKey !== null && idempotencyKey !== message.message_id) {
      throw invalidFormat('must equal the message_id', 'Idempotency-Key')
    }
    if (bytes.byteLength > JCS_CHECK_ABOVE) {
      const { trace: _trace, ...signed } = message
      const size = canonicalizeToBytes(signed).byteLength
      if (size > MAX_MESSAGE_BYTES) {
        return errorReply(
          'payload_too_large',
          `the message is ${size} bytes in canonical form; the limit is ${MAX_MESSAGE_BYTES}`,
        )
      }
    }
    // 7. Date window and TTL.
    this.#replay.checkFreshness(message)
    // 8. Signatures and keys.
    let verdict
    try {
      verdict = await verifyMessage(message, this.#o.resolver, {
        now: this.#now(),
        validated: true,
        ...(this.#o.transitionMs !== undefined ? { transitionMs: this.#o.transitionMs } : {}),
      })
    } catch (error) {
      if (isAgentMsgError(error) && UNVERIFIED_REPLY.has(error.code)) {
        this.#replies.send(message, error.code as ErrorPhaseCode, error.message, false)
      }
      throw error
    }
    const from = message.from.agent
    // 9. Per-sender limit, on the verified sender only: nobody spends another agent's quota.
    const wait = this.#perSender.take(from)
    if (wait > 0) {
      return errorReply('rate_limited', `too many messages from ${from}; retry in ${wait} s`, {
        retryAfter: wait,
      })
    }
    // 10. Duplicate id: accepted again, not processed again.
    if (await this.#replay.isDuplicate(from, message.message_id))
      return acceptedReply(message.message_id)
    if (protocolError) {
      // Well formed and verified, but not something this agent speaks: 202, then an error
      // phase message (SPEC §7.3). The application never sees it.
      if ((await this.#replay.checkAndRemember(message)) === 'new') {
        this.#replies.send(message, protocolError.code, protocolError.message, true)
      }
      return acceptedReply(message.message_id)
    }
    // 11. Authentication level.
    let decision
    try {
      decision = await this.#levels.evaluate({
        from,
        conversationId: message.conversation_id,
        phase: message.phase,
        requestedLevel: message.auth_level,
        level: verdict.level,
        algs: verdict.signatures.map((s) => s.alg),
      })
    } catch (error) {
      if (isAgentMsgError(error) && error.code === 'insufficient_auth_level') {
        this.#replies.send(message, 'insufficient_auth_level', error.message, true)
      }
      throw error
    }
    // 12. Room in the queue, then persist, then commit; only then 202.
    if (!this.#queue.reserve()) {
      return errorReply('unavailable', 'the inbox queue is full; retry later', {
        retryAfter: this.#queueRetryAfter,
      })
    }
    const job: Job = {
      key: undefined,
      message,
      level: verdict.level,
      source: verdict.source,
      keyId: verdict.keyId,
    }
    let queued = false
    try {
      await this.#pending?.add(job)
      await this.#levels.commit(decision)
      // Exclusive per (from, id): of two copies racing through the pipeline, one is 'new'.
      if ((await this.#replay.checkAndRemember(message)) === 'new') {
        this.#queue.push(job, true)
        queued = true
      }
    } finally {
      if (!queued) {
        this.#queue.release()
        this.#pending?.remove(job).catch(this.#onError)
      }
    }
    return acceptedReply(message.message_id)
  }

  async #process(job: Job): Promise<void> {
    try {
      const knownContact = await this.#levels.isKnownContact(job.message.from.agent)
      await this.#o.onMessage(job.message, {
        level: job.level,
        source: job.source,
        keyId: job.keyId,
        knownContact,
        transport: 'https',
      })
    } finally {
      await this.#pending?.remove(job)
    }
  }

  /** Queue again what an earlier run accepted and did not finish processing. */
  async #restore(): Promise<void> {
    if (!this.#pending) return
    for (const job of await this.#pending.load(this.#onError)) {
      // Accepted but perhaps not yet remembered when the process stopped: a sender retrying
      // after a lost 202 must find a duplicate, not a second delivery.
      await this.#replay.remember(job.message.from.agent, job.message.message_id)
      // Already accepted: queued even beyond maxQueue, since refusing is no longer possible.
      this.#queue.push(job, false)
    }
  }

  #document(x: InboxExchange, get: () => unknown): InboxReply {
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
      relay: identity?.relay,
    })
  }

  #methodNotAllowed(x: InboxExchange, allow: string): InboxReply {
    x.discardBody()
    return errorReply('method_not_allowed', `${x.method} is not allowed here; allowed: ${allow}`, {
      headers: { allow },
    })
  }

  #failure(error: unknown): InboxReply {
    if (isAgentMsgError(error) && error.code !== 'internal_error') {
      return errorReply(error.code, error.message, { retryAfter: error.retryAfter })
    }
    this.#onError(error)
    // Nothing about the cause goes on the wire: no stack, no message.
    return errorReply('internal_error', 'internal error')
  }
}

function tooLarge(): InboxReply {
  return errorReply(
    'payload_too_large',
    `the request body exceeds ${MAX_BODY_BYTES} bytes (1 MiB + 64 KiB)`,
    {
      headers: { connection: 'close' },
    },
  )
}
