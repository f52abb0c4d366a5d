/**
 * The relay as a web-standard handler, `(Request) => Promise<Response>` (STYLE pattern 6):
 * every HTTP endpoint of PROFILE §9 with CORS per §6. The WebSocket endpoint is attached by the
 * Node server (`serveRelay`) through {@link RelayHandler.openFeed}.
 */
import {
  AgentMsgError,
  canonicalizeToBytes,
  createKeyResolver,
  formatTimestamp,
  invalidFormat,
  isAgentMsgError,
  normalizeAgentUrl,
  parseAgentId,
  parseStrictJson,
  parseTimestamp,
  ReplayGuard,
  utf8Encode,
  validateMessage,
  verifyMessage,
  type KeyResolver,
  type Message,
  type TraceEntry,
} from '@agentmsg/core'
import {
  createAddressPolicy,
  createNodeFetch,
  createNodeIdentityFetcher,
  createSender,
  isJsonContentType,
  MAX_BODY_BYTES,
  MAX_MESSAGE_BYTES,
  type AddressPolicy,
  type HttpsSender,
  type RateLimit,
} from '@agentmsg/transport-https/node'
import {
  acceptedReply,
  AddressSet,
  addressBucket,
  clientAddress,
  CORS_RESPONSE_HEADERS,
  discardBody,
  errorReply,
  jsonReply,
  preflightReply,
  readLimited,
  TokenBuckets,
  toResponse,
  type InboxReply,
} from '@agentmsg/transport-https/pipeline'
import { NonceMemory, verifyRequest } from '@agentmsg/transport-relay'
import {
  MailboxFullError,
  type MailboxEntry,
  type RelayStore,
  type Subscription,
} from '../store/types.js'
import { Notifier, startFeed, type FeedContext } from './feed.js'
import { SseChannel } from './sse.js'
import type {
  Feed,
  FeedSink,
  RelayHandler,
  RelayHandlerOptions,
  RelayRequestInfo,
} from './types.js'
import { checkWebhookUrl, verifyWebhook, WebhookSink } from './webhook.js'

const DAY = 86_400_000
/** Minimum (and default) retention of an unacknowledged message (PROFILE §9). */
export const DEFAULT_RETENTION_MS = 7 * DAY
/** Page size of `GET /relay/messages`: default, maximum, bytes (PROFILE §9). */
export const DEFAULT_PAGE_LIMIT = 100
export const MAX_PAGE_LIMIT = 500
export const MAX_PAGE_BYTES = 8 * 1024 * 1024
/** Largest subscribe request body. */
const MAX_SUBSCRIBE_BYTES = 64 * 1024
/** Below this body size the canonical-size check cannot fail (see the inbox handler). */
const JCS_CHECK_ABOVE = MAX_MESSAGE_BYTES / 4
/** Grammar of a topic (PROFILE §2). */
const TOPIC_RE = /^[a-z0-9._/-]{1,128}$/
const MAX_TOPICS = 100

const POST_ONLY = 'POST, OPTIONS'
const GET_ONLY = 'GET, OPTIONS'
const DELETE_ONLY = 'DELETE, OPTIONS'

function limit(given: Partial<RateLimit> | undefined, perMinute: number, burst: number): RateLimit {
  return { perMinute: given?.perMinute ?? perMinute, burst: given?.burst ?? burst }
}

/** A mailbox owner: did:key and URL agents only (PROFILE §9). */
function mailboxAgent(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw invalidFormat('is required', field)
  const { kind } = parseAgentId(value, field)
  if (kind !== 'did:key' && kind !== 'url') {
    throw invalidFormat('mailboxes exist only for did:key and URL agents', field)
  }
  return value
}

/**
 * Create the relay's HTTP handler.
 *
 * @example
 * const relay = createRelayHandler({ baseUrl: 'https://relay.example', store: sqliteRelayStore({ path }) })
 * // Node: serveRelay(...) wires it to node:https and adds the WebSocket endpoint.
 */
export function createRelayHandler(options: RelayHandlerOptions): RelayHandler {
  return new Relay(options)
}

class Relay implements RelayHandler {
  readonly baseUrl: string
  readonly resolver: KeyResolver
  readonly ready: Promise<void>
  readonly #origin: string
  readonly #basePath: string
  readonly #store: RelayStore
  readonly #now: () => number
  readonly #onError: (error: unknown) => void
  readonly #retentionMs: number
  readonly #replay: ReplayGuard
  readonly #nonces: NonceMemory
  readonly #perAddress: TokenBuckets
  readonly #perSender: TokenBuckets
  readonly #trusted: AddressSet
  readonly #notifier = new Notifier()
  readonly #feedCtx: FeedContext
  readonly #o: RelayHandlerOptions
  readonly #policy: AddressPolicy
  readonly #fetch: typeof fetch
  readonly #sender: HttpsSender
  /** Webhook feeds by subscription id. */
  readonly #webhooks = new Map<string, { feed: Feed; sink: WebhookSink }>()
  readonly #connections = new Set<() => void>()
  readonly #expireTimer: ReturnType<typeof setInterval>
  #inFlight = 0
  #idle: (() => void) | undefined
  #closing = false
  #closed: Promise<void> | undefined

  constructor(o: RelayHandlerOptions) {
    if (!o.store) throw new TypeError('store is required')
    this.#o = o
    this.baseUrl = normalizeAgentUrl(o.baseUrl)
    const base = new URL(this.baseUrl)
    this.#origin = base.origin
    this.#basePath = base.pathname === '/' ? '' : base.pathname
    this.#store = o.store
    this.#now = o.now ?? Date.now
    this.#onError = o.onError ?? ((error) => console.error('agentmsg relay:', error))
    const retention = o.retentionMs ?? DEFAULT_RETENTION_MS
    if (!(retention >= DEFAULT_RETENTION_MS)) {
      throw new RangeError('retentionMs may only be raised above 7 days (PROFILE §9)')
    }
    this.#retentionMs = retention
    const now = this.#now
    this.#policy = o.addressPolicy ?? createAddressPolicy()
    const ca = o.ca === undefined ? {} : { ca: o.ca }
    this.resolver =
      o.resolver ??
      createKeyResolver({
        fetchIdentity: createNodeIdentityFetcher({ addressPolicy: this.#policy, ...ca }),
        now,
      })
    // The date window of PROFILE §6: 8 days back (7 in a relay + 24 h of retries), 5 min ahead.
    this.#replay = new ReplayGuard({ now })
    this.#nonces = new NonceMemory({ now })
    const limits = o.limits ?? {}
    const maxKeys = limits.maxTrackedKeys ?? 100_000
    this.#perAddress = new TokenBuckets(limit(limits.perAddress, 600, 100), now, maxKeys)
    this.#perSender = new TokenBuckets(limit(limits.perSender, 60, 20), now, maxKeys)
    this.#trusted = new AddressSet(o.trustedProxies)
    this.#feedCtx = { store: this.#store, notifier: this.#notifier, now, onError: this.#onError }
    this.#fetch = o.fetch ?? createNodeFetch({ addressPolicy: this.#policy, ...ca })
    const w = o.webhook ?? {}
    this.#sender = createSender({
      fetch: this.#fetch,
      resume: false,
      ...(w.attemptTimeoutMs !== undefined ? { attemptTimeoutMs: w.attemptTimeoutMs } : {}),
      ...(w.deadlineMs !== undefined ? { deadlineMs: w.deadlineMs } : {}),
      ...(w.random ? { random: w.random } : {}),
      ...(w.clock ? { clock: w.clock } : {}),
    })
    this.#expireTimer = setInterval(() => {
      this.#store.expire(this.#now()).catch(this.#onError)
    }, o.expireIntervalMs ?? 60_000)
    this.#expireTimer.unref?.()
    this.ready = this.#loadWebhooks().catch(this.#onError)
  }

  readonly fetch = async (request: Request, info: RelayRequestInfo = {}): Promise<Response> => {
    try {
      const reply = await this.#route(request, info)
      return reply instanceof ResponseReply ? reply.response : toResponse(reply)
    } catch (error) {
      return toResponse(this.#failure(error))
    }
  }

  admit(address: string | undefined, forwardedFor: string | null = null): number {
    const forwarded = this.#trusted.size > 0 ? forwardedFor : null
    return this.#perAddress.take(addressBucket(clientAddress(address, forwarded, this.#trusted)))
  }

  openFeed(
    agent: string,
    after: string | undefined,
    sink: FeedSink,
    onClose?: (error?: unknown) => void,
  ): Feed {
    return startFeed(this.#feedCtx, agent, after, sink, onClose)
  }

  ack(agent: string, messageId: string, from?: string): Promise<number> {
    return this.#store.ack(agent, messageId, from)
  }

  track(closer: () => void): () => void {
    this.#connections.add(closer)
    return () => this.#connections.delete(closer)
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true
      clearInterval(this.#expireTimer)
      if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#idle = resolve))
      for (const close of [...this.#connections]) {
        try {
          close()
        } catch (error) {
          this.#onError(error)
        }
      }
      this.#connections.clear()
      for (const { feed, sink } of this.#webhooks.values()) {
        sink.close()
        feed.close()
      }
      this.#webhooks.clear()
      await this.ready
      await this.#sender.close()
    })()
    return this.#closed
  }

  // -------------------------------------------------------------------------------------------
  // Routing

  async #route(request: Request, info: RelayRequestInfo): Promise<InboxReply | ResponseReply> {
    const url = new URL(request.url)
    let path = url.pathname
    if (this.#basePath !== '') {
      if (!path.startsWith(`${this.#basePath}/`)) return this.#notFound(request)
      path = path.slice(this.#basePath.length)
    }
    const method = request.method
    let allow: string
    let run: () => Promise<InboxReply | ResponseReply>
    if (path === '/relay/publish') {
      allow = POST_ONLY
      run = () => this.#publish(request)
    } else if (path === '/relay/subscribe') {
      allow = POST_ONLY
      run = () => this.#subscribe(request, url)
    } else if (path.startsWith('/relay/subscribe/') && path.length > '/relay/subscribe/'.length) {
      allow = DELETE_ONLY
      const id = decodeSegment(path.slice('/relay/subscribe/'.length))
      run = () => this.#unsubscribe(request, url, id)
    } else if (path === '/relay/messages') {
      allow = GET_ONLY
      run = () => this.#retrieve(request, url)
    } else if (path.startsWith('/relay/messages/') && path.length > '/relay/messages/'.length) {
      allow = DELETE_ONLY
      const id = decodeSegment(path.slice('/relay/messages/'.length))
      run = () => this.#acknowledge(request, url, id)
    } else if (path === '/relay/stream') {
      allow = GET_ONLY
      run = () => this.#stream(request, url)
    } else {
      return this.#notFound(request)
    }
    // 1. Method.
    const allowed = allow.split(', ')
    if (method === 'OPTIONS') {
      discardBody(request.body)
      return preflightReply(allow)
    }
    if (!allowed.includes(method)) {
      discardBody(request.body)
      return errorReply('method_not_allowed', `${method} is not allowed here; allowed: ${allow}`, {
        headers: { allow },
      })
    }
    // 2. Per-address limit, before a byte of the body is read.
    const wait = this.admit(info.clientAddress, request.headers.get('x-forwarded-for'))
    if (wait > 0) {
      discardBody(request.body)
      return errorReply('rate_limited', `too many requests from this address; retry in ${wait} s`, {
        retryAfter: wait,
      })
    }
    return run()
  }

  #notFound(request: Request): InboxReply {
    discardBody(request.body)
    return errorReply('not_found', 'no such relay endpoint')
  }

  /** The `@target-uri` of agent auth: base URL origin + the request target as received. */
  #targetUri(url: URL): string {
    return `${this.#origin}${url.pathname}${url.search}`
  }

  async #authenticate(
    request: Request,
    url: URL,
    expectedAgent: string | undefined,
    body?: Uint8Array,
  ): Promise<string> {
    const verified = await verifyRequest({
      method: request.method,
      targetUri: this.#targetUri(url),
      headers: request.headers,
      ...(body !== undefined ? { body } : {}),
      resolver: this.resolver,
      nonces: this.#nonces,
      ...(expectedAgent !== undefined ? { expectedAgent } : {}),
      now: this.#now(),
    })
    return verified.agent
  }

  // -------------------------------------------------------------------------------------------
  // Publish

  async #publish(request: Request): Promise<InboxReply> {
    if (this.#closing) {
      discardBody(request.body)
      return errorReply('unavailable', 'the relay is shutting down', { retryAfter: 5 })
    }
    this.#inFlight++
    try {
      return await this.#publishSteps(request)
    } finally {
      if (--this.#inFlight === 0) this.#idle?.()
    }
  }

  async #publishSteps(request: Request): Promise<InboxReply> {
    // 3. Content-Type.
    if (!isJsonContentType(request.headers.get('content-type'))) {
      discardBody(request.body)
      return errorReply(
        'unsupported_media_type',
        'Content-Type must be application/json (charset utf-8)',
      )
    }
    // 4. Size, while streaming.
    const declared = request.headers.get('content-length')
    if (declared !== null && Number(declared) > MAX_BODY_BYTES) {
      discardBody(request.body)
      return tooLarge()
    }
    const bytes = await readLimited(request.body, MAX_BODY_BYTES)
    if (bytes === undefined) return tooLarge()
    // 5. I-JSON. 6. Validation.
    const { message } = validateMessage(parseStrictJson(bytes))
    if (message.trace !== undefined && message.trace.received.length > 0) {
      throw invalidFormat(
        'must be empty on publish: this relay does not forward from relays',
        'trace.received',
      )
    }
    const idempotencyKey = request.headers.get('idempotency-key')
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
    // 8. Signatures: at least one Ed25519 signature of from.agent must verify.
    const receivedAt = this.#now()
    const verdict = await verifyMessage(message, this.resolver, {
      now: receivedAt,
      validated: true,
    })
    if (!verdict.signatures.some((s) => s.alg === 'ed25519')) {
      throw new AgentMsgError(
        'invalid_signature',
        'a relay needs an Ed25519 signature of from.agent that verifies (PROFILE §9)',
      )
    }
    const from = message.from.agent
    // 9. Per-sender limit, on the verified sender.
    const wait = this.#perSender.take(from)
    if (wait > 0) {
      return errorReply('rate_limited', `too many messages from ${from}; retry in ${wait} s`, {
        retryAfter: wait,
      })
    }
    // 10. Mailboxes: told only now, after the signature verified.
    let mailboxes: string[]
    if (message.to.agent !== undefined) {
      const to = message.to.agent
      const { kind } = parseAgentId(to, 'to.agent')
      if (
        (kind !== 'did:key' && kind !== 'url') ||
        (await this.#store.mailboxState(to)) !== 'open'
      ) {
        return errorReply('not_found', `this relay holds no open mailbox for ${to}`)
      }
      mailboxes = [to]
    } else {
      mailboxes = await this.#store.topicSubscribers(message.to.topic)
      if (mailboxes.length === 0) return acceptedReply(message.message_id)
    }
    // 11. Trace, before the message becomes visible.
    const entry: TraceEntry = {
      by: `relay:${this.baseUrl}`,
      with: 'https/agentmsg-1',
      at: formatTimestamp(receivedAt),
      from,
    }
    const traced: Message = { ...message, trace: { ...message.trace, received: [entry] } }
    const json = JSON.stringify(traced)
    const date = parseTimestamp(message.date, 'date')
    let expiresAt = receivedAt + this.#retentionMs
    if (message.ttl_seconds !== undefined)
      expiresAt = Math.min(expiresAt, date + message.ttl_seconds * 1000)
    // 12. Durable store, then 202.
    let results
    try {
      results = await this.#store.publish({
        mailboxes,
        from,
        messageId: message.message_id,
        json,
        bytes: utf8Encode(json).byteLength,
        receivedAt,
        expiresAt,
      })
    } catch (error) {
      if (error instanceof MailboxFullError) {
        return errorReply('unavailable', `the mailbox of ${error.mailbox} is full; retry later`, {
          retryAfter: this.#o.mailboxFullRetryAfter ?? 60,
        })
      }
      throw error
    }
    for (const r of results) if (!r.duplicate) this.#notifier.notify(r.mailbox)
    return acceptedReply(message.message_id)
  }

  // -------------------------------------------------------------------------------------------
  // Subscriptions

  async #subscribe(request: Request, url: URL): Promise<InboxReply> {
    if (!isJsonContentType(request.headers.get('content-type'))) {
      discardBody(request.body)
      return errorReply(
        'unsupported_media_type',
        'Content-Type must be application/json (charset utf-8)',
      )
    }
    const bytes = await readLimited(request.body, MAX_SUBSCRIBE_BYTES)
    if (bytes === undefined) return tooLarge()
    const body = parseStrictJson(bytes)
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw invalidFormat('the request body must be a JSON object')
    }
    const b = body as Record<string, unknown>
    const sub = b.subscribe
    if (typeof sub !== 'object' || sub === null || Array.isArray(sub)) {
      throw invalidFormat('must be an object', 'subscribe')
    }
    const s = sub as Record<string, unknown>
    const agent = mailboxAgent(s.agent, 'subscribe.agent')
    let topics: string[] = []
    if (s.topics !== undefined) {
      if (!Array.isArray(s.topics) || s.topics.length > MAX_TOPICS) {
        throw invalidFormat(`must be an array of at most ${MAX_TOPICS} topics`, 'subscribe.topics')
      }
      topics = s.topics.map((t, i) => {
        if (typeof t !== 'string' || !TOPIC_RE.test(t)) {
          throw invalidFormat('is not a topic ([a-z0-9._/-]{1,128})', `subscribe.topics[${i}]`)
        }
        return t
      })
    }
    let webhookUrl: string | undefined
    if (b.push !== undefined) {
      const push = b.push
      if (typeof push !== 'object' || push === null || Array.isArray(push)) {
        throw invalidFormat('must be an object', 'push')
      }
      const p = push as Record<string, unknown>
      if (p.mode !== 'webhook') throw invalidFormat('must be "webhook"', 'push.mode')
      webhookUrl = checkWebhookUrl(p.url)
    }
    await this.#authenticate(request, url, agent, bytes)
    if (webhookUrl !== undefined) {
      await verifyWebhook(this.#fetch, webhookUrl, this.#o.webhook?.verifyTimeoutMs ?? 10_000)
    }
    const subscription = await this.#store.subscribe({
      agent,
      topics,
      ...(webhookUrl !== undefined ? { webhook: { url: webhookUrl, verified: true } } : {}),
      now: this.#now(),
    })
    if (subscription.webhook?.verified) this.#startWebhook(subscription)
    return jsonReply(201, { status: 'subscribed', subscription_id: subscription.id })
  }

  async #unsubscribe(request: Request, url: URL, id: string): Promise<InboxReply> {
    discardBody(request.body)
    const agent = await this.#authenticate(request, url, undefined)
    if (await this.#store.unsubscribe(id, agent)) {
      this.#stopWebhook(id)
      return { status: 204, headers: { ...CORS_RESPONSE_HEADERS }, body: null }
    }
    const all = await this.#store.subscriptions()
    if (all.some((s) => s.id === id)) {
      return errorReply('forbidden', 'this subscription belongs to another agent')
    }
    return errorReply('not_found', 'no such subscription')
  }

  #startWebhook(subscription: Subscription): void {
    const url = subscription.webhook?.url
    if (url === undefined || this.#closing || this.#webhooks.has(subscription.id)) return
    const agent = subscription.agent
    const sink = new WebhookSink({
      sender: this.#sender,
      url,
      ack: (entry: MailboxEntry) => this.#store.ack(agent, entry.messageId, entry.from),
      maxInFlight: this.#o.webhook?.maxInFlight ?? 64,
      onError: this.#onError,
    })
    const feed = startFeed(this.#feedCtx, agent, undefined, sink)
    this.#webhooks.set(subscription.id, { feed, sink })
  }

  #stopWebhook(id: string): void {
    const w = this.#webhooks.get(id)
    if (!w) return
    w.sink.close()
    w.feed.close()
    this.#webhooks.delete(id)
  }

  async #loadWebhooks(): Promise<void> {
    for (const s of await this.#store.subscriptions()) {
      if (s.webhook?.verified) this.#startWebhook(s)
    }
  }

  // -------------------------------------------------------------------------------------------
  // Retrieve, acknowledge, stream

  async #retrieve(request: Request, url: URL): Promise<InboxReply> {
    const q = url.searchParams
    const agent = mailboxAgent(q.get('agent') ?? undefined, 'agent')
    const after = cursorParam(q.get('after'))
    let count = DEFAULT_PAGE_LIMIT
    const given = q.get('limit')
    if (given !== null) {
      if (!/^[0-9]{1,9}$/.test(given) || Number(given) < 1) {
        throw invalidFormat('must be a positive integer', 'limit')
      }
      count = Math.min(MAX_PAGE_LIMIT, Number(given))
    }
    await this.#authenticate(request, url, agent)
    const page = await this.#read(agent, after, count, MAX_PAGE_BYTES)
    const cursor = page.cursor ?? after
    // The stored JSON goes out as it is: no parse and re-serialisation per message.
    const text = `{"messages":[${page.entries.map((e) => e.json).join(',')}],"cursor":${JSON.stringify(cursor ?? null)}}`
    return {
      status: 200,
      headers: {
        ...CORS_RESPONSE_HEADERS,
        'content-type': 'application/json',
        'cache-control': 'no-store',
      },
      body: text,
    }
  }

  async #read(agent: string, after: string | undefined, count: number, maxBytes: number) {
    try {
      // Writes already asked for (a WebSocket ack frame, say) land before a client's retrieve.
      await this.#store.settled?.()
      return await this.#store.retrieve(agent, {
        ...(after !== undefined ? { after } : {}),
        limit: count,
        maxBytes,
        now: this.#now(),
      })
    } catch (error) {
      if (error instanceof RangeError) throw invalidFormat('is not a cursor of this relay', 'after')
      throw error
    }
  }

  async #acknowledge(request: Request, url: URL, messageId: string): Promise<InboxReply> {
    discardBody(request.body)
    const q = url.searchParams
    const agent = mailboxAgent(q.get('agent') ?? undefined, 'agent')
    const from = q.get('from') ?? undefined
    await this.#authenticate(request, url, agent)
    const removed = await this.#store.ack(agent, messageId, from)
    if (removed === 0) return errorReply('not_found', 'no such message in this mailbox')
    return { status: 204, headers: { ...CORS_RESPONSE_HEADERS }, body: null }
  }

  async #stream(request: Request, url: URL): Promise<InboxReply | ResponseReply> {
    const q = url.searchParams
    const agent = mailboxAgent(q.get('agent') ?? undefined, 'agent')
    // Last-Event-ID wins over after (PROFILE §9).
    const lastEventId = request.headers.get('last-event-id')
    const after = cursorParam(
      lastEventId !== null && lastEventId !== '' ? lastEventId : q.get('after'),
    )
    await this.#authenticate(request, url, agent)
    if (this.#closing)
      return errorReply('unavailable', 'the relay is shutting down', { retryAfter: 5 })
    // A bad cursor is a 400 now, not a stream that ends at once.
    await this.#read(agent, after, 1, MAX_PAGE_BYTES)
    let feed: Feed | undefined
    let untrack: (() => void) | undefined
    const channel = new SseChannel({
      heartbeatMs: this.#o.heartbeatMs ?? 15_000,
      maxBytes: this.#o.maxStreamBufferBytes ?? 4 * 1024 * 1024,
      stallTimeoutMs: this.#o.stallTimeoutMs ?? 60_000,
      onEnd: () => {
        feed?.close()
        untrack?.()
      },
    })
    untrack = this.track(() => channel.close())
    feed = this.openFeed(agent, after, channel)
    return new ResponseReply(
      new Response(channel.stream, {
        status: 200,
        headers: {
          ...CORS_RESPONSE_HEADERS,
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          'x-accel-buffering': 'no',
        },
      }),
    )
  }

  #failure(error: unknown): InboxReply {
    if (isAgentMsgError(error) && error.code !== 'internal_error') {
      return errorReply(error.code, error.message, { retryAfter: error.retryAfter })
    }
    this.#onError(error)
    return errorReply('internal_error', 'internal error')
  }
}

/** A streaming answer that is not plain data (SSE). */
class ResponseReply {
  constructor(readonly response: Response) {}
}

function tooLarge(): InboxReply {
  return errorReply('payload_too_large', `the request body exceeds the limit`, {
    headers: { connection: 'close' },
  })
}

function cursorParam(value: string | null): string | undefined {
  if (value === null || value === '') return undefined
  if (value.length > 128) throw invalidFormat('is not a cursor of this relay', 'after')
  return value
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    throw invalidFormat('is not a valid path segment', 'path')
  }
}
