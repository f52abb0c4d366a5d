/**
 * The relay as a web-standard handler, `(Request) => Promise<Response>`: every HTTP endpoint of
 * PROFILE §9 with CORS per §6 (publish.ts, subscriptions.ts, mailbox.ts; routing in routes.ts).
 * This file holds the relay's state and lifecycle. `serveRelay` adds the WebSocket endpoint.
 */

import { isAgentMsgError, type KeyResolver, normalizeAgentUrl, PROFILE } from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import {
  ClientLimits,
  createAddressPolicy,
  discardBody,
  errorReply,
  type HttpReply,
  NonceMemory,
  TokenBuckets,
  toResponse,
} from '@agentmsg/core/server'
import { createIdentityFetcher, createNodeFetch } from '@agentmsg/transport-https/node'
import type { RelayStore } from '../store/types.js'
import type { RelayContext, RelayReply } from './context.js'
import { type Feed, type FeedSink, Notifier, startFeed } from './feed.js'
import { healthPath, healthReply, readiness } from './health.js'
import { acknowledgeMany, acknowledgeMessage, retrieveMessages, streamMessages } from './mailbox.js'
import { Publisher } from './publish.js'
import { type RequestTrace, reportRefused, reportReply, timedStore } from './relay-report.js'
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
    const store = observer?.storeWrite ? timedStore(o.store, observer) : o.store
    this.#store = store
    const now = o.now ?? Date.now
    const onError = o.onError ?? ((error) => console.error('agentmsg relay:', error))
    this.#onError = onError
    const retention = o.retentionMs ?? PROFILE.relayRetentionMs
    if (!(retention >= PROFILE.relayRetentionMs)) {
      throw new RangeError('retentionMs may only be raised above 7 days (PROFILE §9)')
    }
    // Outbound: https only, under the address rules (identity documents, webhooks).
    const nodeFetch = createNodeFetch({
      addressPolicy: o.addressPolicy ?? createAddressPolicy(),
      ...(o.ca !== undefined && { ca: o.ca }),
    })
    const fetchIdentity = createIdentityFetcher({ fetch: nodeFetch })
    this.resolver = o.resolver ?? createKeyResolver({ fetchIdentity, now })
    const notifier = new Notifier()
    const limits = o.limits ?? {}
    this.#maxStreams = limits.streamsPerAgent ?? PROFILE.streamsPerAgent
    const remember = o.store.rememberNonce?.bind(o.store)
    const ctx: RelayContext = {
      baseUrl: this.baseUrl,
      origin: base.origin,
      options: o,
      store,
      resolver: this.resolver,
      nonces: new NonceMemory({ now }),
      ...(remember && {
        sharedNonces: (k, nonce, expiresAt) => remember(k, nonce, expiresAt, now()),
      }),
      notifier,
      feed: { store, notifier, now, onError },
      now,
      onError,
      closing: () => this.#closing,
      track: (closer) => this.track(closer),
      claimStream: (agent, kind) => this.claimStream(agent, kind),
    }
    this.#ctx = ctx
    // A store shared by several relay processes signals entries another process added, so a
    // stream here gets a message published there without polling.
    this.#unwatch = o.store.watch?.((mailbox) =>
      mailbox === undefined ? notifier.notifyAll() : notifier.notify(mailbox),
    )
    const trustedProxies = o.trustedProxies
    this.#clients = new ClientLimits(
      { ...limits, ...(trustedProxies && { trustedProxies }), now },
      'agentmsg relay',
    )
    const perSender = new TokenBuckets(
      { ...PROFILE.perSender, ...limits.perSender },
      now,
      limits.maxTrackedKeys ?? 100_000,
    )
    this.#publisher = new Publisher(ctx, retention, (from) => perSender.take(from))
    const maxSubscriptions = limits.subscriptionsPerAgent ?? PROFILE.subscriptionsPerAgent
    const subscriptions = new Subscriptions(ctx, o.fetch ?? nodeFetch, maxSubscriptions)
    this.#subscriptions = subscriptions
    this.#ready = readiness(store, () => this.#closing, o.readyCheck)
    this.#endpoints = {
      publish: (request, trace) => this.#publish(request, trace),
      subscribe: (request, url) => subscriptions.subscribe(request, url),
      unsubscribe: (request, url, id) => subscriptions.unsubscribe(request, url, id),
      retrieve: (request, url) => retrieveMessages(ctx, request, url),
      acknowledge: (request, url, id) => acknowledgeMessage(ctx, request, url, id),
      acknowledgeMany: (request, url) => acknowledgeMany(ctx, request, url),
      stream: (request, url) => streamMessages(ctx, request, url),
    }
    this.#expireTimer = setInterval(
      () => void store.expire(now()).catch(onError),
      o.expireIntervalMs ?? 60_000,
    )
    this.#expireTimer.unref?.()
    this.ready = subscriptions.load().catch(onError)
  }

  readonly fetch = async (
    request: Request,
    info: { clientAddress?: string } = {},
  ): Promise<Response> => {
    // `/healthz`, `/readyz` (health.ts): not routed, not rate limited, not reported.
    const probe = healthPath(request.url, this.#basePath)
    if (probe !== undefined) {
      discardBody(request.body)
      return toResponse(healthReply(probe === 'healthz' || (await this.#ready()), request.method))
    }
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
    const delivered = (n: number) => this.#observer?.delivered?.('ws', n)
    return startFeed({ ...this.#ctx.feed, delivered }, agent, after, sink, onClose)
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
    return [...this.#streams.values()].reduce((sum, n) => sum + n, 0)
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
