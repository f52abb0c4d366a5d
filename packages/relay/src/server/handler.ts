/**
 * The relay as a web-standard handler, `(Request) => Promise<Response>`: every HTTP endpoint of
 * PROFILE §9 with CORS per §6. The endpoints live in publish.ts, subscriptions.ts and
 * mailbox.ts, the routing in routes.ts; this file holds the relay's state and its lifecycle.
 * The WebSocket endpoint is attached by the Node server (`serveRelay`) through
 * {@link RelayServerHandler.openFeed}.
 */

import { isAgentMsgError, type KeyResolver, normalizeAgentUrl, PROFILE } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/http'
import {
  ClientLimits,
  createKeyResolver,
  discardBody,
  errorReply,
  type HttpReply,
  NonceMemory,
  TokenBuckets,
  toResponse,
} from '@agentmsg/core/receive'
import { createIdentityFetcher, createNodeFetch } from '@agentmsg/transport-https/node'
import type { RelayStore } from '../store/types.js'
import type { RelayContext, RelayReply } from './context.js'
import { type Feed, type FeedContext, type FeedSink, Notifier, startFeed } from './feed.js'
import { type HealthPath, healthPath, healthReply, readiness } from './health.js'
import { acknowledgeMany, acknowledgeMessage, retrieveMessages, streamMessages } from './mailbox.js'
import { deliveryContexts, timedStore } from './observed-store.js'
import { Publisher } from './publish.js'
import { type RequestTrace, reportRefused, reportReply } from './relay-report.js'
import { dispatch, type RelayEndpoints } from './routes.js'
import { Subscriptions } from './subscriptions.js'
import type { RelayHandlerOptions, RelayObserver, RelayServerHandler, StreamKind } from './types.js'

/**
 * Create the relay's HTTP handler, webhook push included.
 *
 * @example
 * const relay = createRelayHandler({ baseUrl: 'https://relay.example', store: memoryRelayStore() })
 * // Node: serveRelay(...) wires it to node:https and adds the WebSocket endpoint.
 */
export function createRelayHandler(options: RelayHandlerOptions): RelayServerHandler {
  return new Relay(options)
}

class Relay implements RelayServerHandler {
  readonly baseUrl: string
  readonly resolver: KeyResolver
  readonly ready: Promise<void>
  readonly #ctx: RelayContext
  readonly #basePath: string
  readonly #store: RelayStore
  readonly #onError: (error: unknown) => void
  readonly #clients: ClientLimits
  readonly #publisher: Publisher
  readonly #subscriptions: Subscriptions
  readonly #endpoints: RelayEndpoints
  readonly #observer: RelayObserver | undefined
  readonly #ready: () => Promise<boolean>
  /** WebSocket feeds: their entries count as `ws` deliveries. */
  readonly #wsFeed: FeedContext
  readonly #connections = new Set<() => void>()
  /** Open streams per agent (PROFILE §9 stream cap). */
  readonly #streams = new Map<string, number>()
  readonly #maxStreams: number
  readonly #expireTimer: ReturnType<typeof setInterval>
  readonly #unwatch: (() => void) | undefined
  #inFlight = 0
  #idle: (() => void) | undefined
  #closing = false
  #closed: Promise<void> | undefined

  constructor(o: RelayHandlerOptions) {
    if (!o.store) throw new TypeError('store is required')
    this.baseUrl = normalizeAgentUrl(o.baseUrl)
    const base = new URL(this.baseUrl)
    this.#basePath = base.pathname === '/' ? '' : base.pathname
    const observer = o.observer
    this.#observer = observer
    // Publishes and acknowledgements timed to their durable commit (metrics), when observed.
    const store = observer ? timedStore(o.store, observer) : o.store
    this.#store = store
    const now = o.now ?? Date.now
    const onError = o.onError ?? ((error) => console.error('agentmsg relay:', error))
    this.#onError = onError
    const retention = o.retentionMs ?? PROFILE.relayRetentionMs
    if (!(retention >= PROFILE.relayRetentionMs)) {
      throw new RangeError('retentionMs may only be raised above 7 days (PROFILE §9)')
    }
    // Outbound: https only, under the address rules (identity documents, webhooks).
    const ca = o.ca === undefined ? {} : { ca: o.ca }
    const nodeFetch = createNodeFetch({
      addressPolicy: o.addressPolicy ?? createAddressPolicy(),
      ...ca,
    })
    const fetchIdentity = createIdentityFetcher({ fetch: nodeFetch })
    this.resolver = o.resolver ?? createKeyResolver({ fetchIdentity, now })
    const fetchFn = o.fetch ?? nodeFetch
    const notifier = new Notifier()
    const limits = o.limits ?? {}
    this.#maxStreams = limits.streamsPerAgent ?? PROFILE.streamsPerAgent
    this.#ctx = {
      baseUrl: this.baseUrl,
      origin: base.origin,
      options: o,
      store,
      resolver: this.resolver,
      nonces: new NonceMemory({ now }),
      ...(o.store.rememberNonce !== undefined
        ? {
            sharedNonces: (keyId: string, nonce: string, expiresAt: number) =>
              o.store.rememberNonce!(keyId, nonce, expiresAt, now()),
          }
        : {}),
      notifier,
      feed: { store, notifier, now, onError },
      now,
      onError,
      closing: () => this.#closing,
      track: (closer) => this.track(closer),
      claimStream: (agent) => this.claimStream(agent),
    }
    // A store shared by several relay processes signals entries another process added, so a
    // stream here gets a message published there without polling.
    this.#unwatch = o.store.watch?.((mailbox) =>
      mailbox === undefined ? notifier.notifyAll() : notifier.notify(mailbox),
    )
    const maxKeys = limits.maxTrackedKeys ?? 100_000
    this.#clients = new ClientLimits(
      { ...limits, ...(o.trustedProxies ? { trustedProxies: o.trustedProxies } : {}), now },
      'agentmsg relay',
    )
    const perSender = new TokenBuckets({ ...PROFILE.perSender, ...limits.perSender }, now, maxKeys)
    this.#publisher = new Publisher(this.#ctx, retention, (from) => perSender.take(from))
    const maxSubscriptions = limits.subscriptionsPerAgent ?? PROFILE.subscriptionsPerAgent
    this.#subscriptions = new Subscriptions(this.#ctx, fetchFn, maxSubscriptions, observer)
    const ctx = this.#ctx
    const modes = deliveryContexts(ctx, observer, (agent) => this.claimStream(agent, 'sse'))
    this.#wsFeed = modes.wsFeed
    this.#ready = readiness(store, () => this.#closing, o.readyCheck)
    this.#endpoints = {
      publish: (request, trace) => this.#publish(request, trace),
      subscribe: (request, url) => this.#subscriptions.subscribe(request, url),
      unsubscribe: (request, url, id) => this.#subscriptions.unsubscribe(request, url, id),
      retrieve: (request, url) => retrieveMessages(modes.retrieve, request, url),
      acknowledge: (request, url, id) => acknowledgeMessage(ctx, request, url, id),
      acknowledgeMany: (request, url) => acknowledgeMany(ctx, request, url),
      stream: (request, url) => streamMessages(modes.sse, request, url),
    }
    this.#expireTimer = setInterval(() => {
      this.#store.expire(now()).catch(onError)
    }, o.expireIntervalMs ?? 60_000)
    this.#expireTimer.unref?.()
    this.ready = this.#subscriptions.load().catch(onError)
  }

  readonly fetch = async (
    request: Request,
    info: { clientAddress?: string } = {},
  ): Promise<Response> => {
    const probe = healthPath(request.url, this.#basePath)
    if (probe !== undefined) return toResponse(await this.#probe(probe, request))
    const trace: RequestTrace = { route: 'unknown' }
    let reply: RelayReply
    try {
      const client = { limits: this.#clients, address: info.clientAddress, trace }
      reply = await dispatch(request, this.#basePath, this.#endpoints, client)
    } catch (error) {
      reply = this.#failure(error)
    }
    if (reply instanceof Response) return reply
    if (this.#observer !== undefined) {
      if (reply.status >= 400 && trace.bucket === undefined) {
        trace.bucket = this.bucketOf(info.clientAddress, request.headers.get('x-forwarded-for'))
      }
      reportReply(this.#observer, request.method, trace, reply)
    }
    return toResponse(reply)
  }

  /** `/healthz`, `/readyz` (health.ts): not routed, not rate limited, not reported. */
  async #probe(probe: HealthPath, request: Request): Promise<HttpReply> {
    discardBody(request.body)
    const ok = probe === 'healthz' || (await this.#ready())
    return healthReply(ok, request.method)
  }

  admit(address: string | undefined, forwardedFor: string | null = null): number {
    let bucket: string | undefined
    try {
      bucket = this.#clients.bucket(address, () => forwardedFor)
    } catch (error) {
      // No address while per-address limiting is on: refused, and the operator is told.
      this.#onError(error)
      return 1
    }
    const wait = this.#clients.take(bucket)
    if (wait > 0 && this.#observer !== undefined) {
      const refused = { code: 'rate_limited', status: 429, route: 'ws', method: 'GET' }
      reportRefused(this.#observer, { ...refused, ...(bucket && { bucket }) }, 'address')
    }
    return wait
  }

  bucketOf(address: string | undefined, forwardedFor: string | null = null): string | undefined {
    try {
      return this.#clients.bucket(address, () => forwardedFor)
    } catch {
      return undefined
    }
  }

  openFeed(
    agent: string,
    after: string | undefined,
    sink: FeedSink,
    onClose?: (error?: unknown) => void,
  ): Feed {
    return startFeed(this.#wsFeed, agent, after, sink, onClose)
  }

  claimStream(agent: string, kind?: StreamKind): (() => void) | undefined {
    const open = this.#streams.get(agent) ?? 0
    if (open >= this.#maxStreams) return undefined
    this.#streams.set(agent, open + 1)
    const observer = kind === undefined ? undefined : this.#observer
    observer?.streamOpened?.(kind!)
    let released = false
    return () => {
      if (released) return
      released = true
      observer?.streamClosed?.(kind!)
      const left = (this.#streams.get(agent) ?? 1) - 1
      if (left > 0) this.#streams.set(agent, left)
      else this.#streams.delete(agent)
    }
  }

  openStreams(agent?: string): number {
    if (agent !== undefined) return this.#streams.get(agent) ?? 0
    let n = 0
    for (const open of this.#streams.values()) n += open
    return n
  }

  ack(agent: string, messageId: string, from?: string): Promise<number> {
    // A WebSocket ack frame gets no answer: it may ride with the next commit (AckOptions.lazy).
    return this.#store.ack(agent, messageId, from, { lazy: true })
  }

  track(closer: () => void): () => void {
    this.#connections.add(closer)
    return () => this.#connections.delete(closer)
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true
      clearInterval(this.#expireTimer)
      this.#unwatch?.()
      if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#idle = resolve))
      for (const close of [...this.#connections]) {
        try {
          close()
        } catch (error) {
          this.#onError(error)
        }
      }
      this.#connections.clear()
      this.#subscriptions.close()
      await this.ready
    })()
    return this.#closed
  }

  /** Publishes in flight are stored and answered before `close()` goes on (PROFILE §9 202). */
  async #publish(request: Request, trace?: RequestTrace): Promise<HttpReply> {
    if (this.#closing) {
      discardBody(request.body)
      return errorReply('unavailable', 'the relay is shutting down', { retryAfter: 5 })
    }
    this.#inFlight++
    try {
      return await this.#publisher.publish(request, trace)
    } finally {
      if (--this.#inFlight === 0) this.#idle?.()
    }
  }

  #failure(error: unknown): HttpReply {
    if (isAgentMsgError(error) && error.code !== 'internal_error') {
      return errorReply(error.code, error.message, { retryAfter: error.retryAfter })
    }
    this.#onError(error)
    return errorReply('internal_error', 'internal error')
  }
}
