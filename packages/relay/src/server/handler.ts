/**
 * The relay as a web-standard handler, `(Request) => Promise<Response>`: every HTTP endpoint of
 * PROFILE §9 with CORS per §6 (publish.ts, subscriptions.ts, mailbox.ts; routing in routes.ts).
 * This file holds the relay's state and lifecycle. `serveRelay` adds the WebSocket endpoint.
 */
import { isAgentMsgError, normalizeAgentUrl, PROFILE } from '@agentmsg/core'
import { type TraceSpan, traced } from '@agentmsg/core/http'
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
import { feedContext, type RelayContext, type RelayReply } from './context.js'
import { Notifier, startFeed } from './feed.js'
import { healthPath, healthReply, readiness } from './health.js'
import { acknowledgeMany, acknowledgeMessage, retrieveMessages, streamMessages } from './mailbox.js'
import { publisher } from './publish.js'
import { type RequestTrace, reportRefused, reportReply, timedStore } from './relay-report.js'
import { dispatch, type RelayEndpoints } from './routes.js'
import { streamCaps } from './streams.js'
import { relaySubscriptions } from './subscriptions.js'
import type { RelayHandlerOptions, RelayServerHandler } from './types.js'
import { Uncommitted } from './uncommitted.js'

/**
 * Create the relay's HTTP handler, webhook push included.
 *
 * @example
 * const relay = createRelayHandler({ baseUrl: 'https://relay.example', store: memoryRelayStore() })
 * // Node: serveRelay(...) wires it to node:https and adds the WebSocket endpoint.
 */
export function createRelayHandler(o: RelayHandlerOptions): RelayServerHandler {
  const baseUrl = normalizeAgentUrl(o.baseUrl)
  const base = new URL(baseUrl)
  const basePath = base.pathname === '/' ? '' : base.pathname
  const { observer } = o
  const store = observer?.storeWrite ? timedStore(o.store, observer) : o.store
  const now = o.now ?? Date.now
  const onError = o.onError ?? ((error) => console.error('agentmsg relay:', error))
  const retention = o.retentionMs ?? PROFILE.relayRetentionMs
  if (!(retention >= PROFILE.relayRetentionMs)) {
    throw new RangeError('retentionMs may only be raised above 7 days (PROFILE §9)')
  }
  // Outbound: https only, under the address rules (identity documents, webhooks).
  const addressPolicy = o.addressPolicy ?? createAddressPolicy()
  const nodeFetch = createNodeFetch({ addressPolicy, ca: o.ca })
  const fetchIdentity = createIdentityFetcher({ fetch: nodeFetch })
  const resolver = o.resolver ?? createKeyResolver({ fetchIdentity, now })
  const limits = o.limits ?? {}
  const connections = new Set<() => void>()
  const streams = streamCaps(limits, observer)
  let inFlight = 0
  let idle: (() => void) | undefined
  let closing = false
  let closed: Promise<void> | undefined

  const track = (closer: () => void) => {
    connections.add(closer)
    return () => connections.delete(closer)
  }
  const notifier = new Notifier()
  const lost = (error: unknown) => {
    observer?.commitFailedAfterPush?.()
    onError(new Error('a commit failed after its message was pushed', { cause: error }))
  }
  const ctx: RelayContext = {
    baseUrl,
    origin: base.origin,
    options: o,
    store,
    resolver,
    nonces: new NonceMemory({ now }),
    notifier,
    ...(o.pushBeforeCommit !== false && { uncommitted: new Uncommitted(notifier, lost) }),
    now,
    onError,
    closing: () => closing,
    track,
    claimStream: streams.claim,
  }
  // A store shared by several relay processes signals entries another process added, so a
  // stream here gets a message published there without polling.
  const unwatch = o.store.watch?.((mailbox) =>
    mailbox === undefined ? notifier.notifyAll() : notifier.notify(mailbox),
  )
  const clients = new ClientLimits(
    { ...limits, trustedProxies: o.trustedProxies, now },
    'agentmsg relay',
  )
  const senderLimit = { ...PROFILE.perSender, ...limits.perSender }
  const perSender = new TokenBuckets(senderLimit, now, limits.maxTrackedKeys)
  const publishOne = publisher(ctx, retention, (from) => perSender.take(from))
  const maxSubscriptions = limits.subscriptionsPerAgent ?? PROFILE.subscriptionsPerAgent
  const subscriptions = relaySubscriptions(ctx, o.fetch ?? nodeFetch, maxSubscriptions)
  const isReady = readiness(store, () => closing, o.readyCheck)
  /** Publishes in flight are stored and answered before `close()` goes on (PROFILE §9 202). */
  const publish = async (request: Request, trace?: RequestTrace): Promise<HttpReply> => {
    if (closing) {
      discardBody(request)
      return errorReply('unavailable', 'the relay is shutting down', { retryAfter: 5 })
    }
    inFlight++
    return publishOne(request, trace).finally(() => {
      if (--inFlight === 0) idle?.()
    })
  }
  const endpoints: RelayEndpoints = {
    publish: (request, _url, _id, trace) => publish(request, trace),
    subscribe: (request, url) => subscriptions.subscribe(request, url),
    unsubscribe: (request, url, id) => subscriptions.unsubscribe(request, url, id),
    retrieve: (request, url, id) => retrieveMessages(ctx, request, url, id),
    acknowledge: (request, url, id) => acknowledgeMessage(ctx, request, url, id),
    ack: (request, url, id) => acknowledgeMany(ctx, request, url, id),
    stream: (request, url, id) => streamMessages(ctx, request, url, id),
  }
  const expire = () => void store.expire(now()).catch(onError)
  const expireTimer = setInterval(expire, o.expireIntervalMs ?? 60_000)
  expireTimer.unref?.()
  const ready = subscriptions.load().catch(onError)
  const bucketOf = (address: string | undefined, forwardedFor: string | null = null) => {
    try {
      return clients.bucket(address, () => forwardedFor)
    } catch {
      return undefined
    }
  }

  /** One request, in its span when tracing: named by route, labelled as the metrics are. */
  const answer = async (span: TraceSpan | undefined, request: Request, address?: string) => {
    const trace: RequestTrace = { route: 'unknown' }
    let reply: RelayReply
    try {
      reply = await dispatch(request, basePath, endpoints, clients, address, trace)
    } catch (error) {
      if (isAgentMsgError(error) && error.code !== 'internal_error') {
        reply = errorReply(error.code, error.message, { retryAfter: error.retryAfter })
      } else {
        onError(error)
        reply = errorReply('internal_error', 'internal error')
      }
    }
    span?.updateName(`agentmsg.relay.${trace.route}`)
    if (reply instanceof Response) return reply
    if (observer === undefined && span === undefined) return toResponse(reply)
    if (observer !== undefined && reply.status >= 400 && trace.bucket === undefined) {
      trace.bucket = bucketOf(address, request.headers.get('x-forwarded-for'))
    }
    const code = reportReply(observer, request.method, trace, reply)
    span?.setAttributes({ 'agentmsg.relay.code': code })
    return toResponse(reply)
  }

  return {
    baseUrl,
    resolver,
    ready,
    async fetch(request, info = {}) {
      // `/healthz`, `/readyz` (health.ts): not routed, not rate limited, not reported.
      const probe = healthPath(request.url, basePath)
      if (probe !== undefined) {
        discardBody(request)
        return toResponse(healthReply(probe === 'healthz' || (await isReady()), request.method))
      }
      // A request that carries a trace context (traceparent) joins that trace.
      return traced('agentmsg.relay', 'SERVER', request, answer, request, info.clientAddress)
    },
    admit(address, forwardedFor = null) {
      let bucket: string | undefined
      try {
        bucket = clients.bucket(address, () => forwardedFor)
      } catch (error) {
        // No address while per-address limiting is on: refused, and the operator is told.
        onError(error)
        return 1
      }
      const wait = clients.take(bucket)
      if (wait > 0 && observer !== undefined) {
        const refused = { code: 'rate_limited', status: 429, route: 'ws', method: 'GET' }
        reportRefused(observer, { ...refused, ...(bucket && { bucket }) }, 'address')
      }
      return wait
    },
    bucketOf,
    openFeed: (agent, after, sink, onClose) =>
      startFeed(feedContext(ctx, 'ws'), agent, after, sink, onClose),
    claimStream: streams.claim,
    openStreams: streams.open,
    // A WebSocket ack frame gets no answer: it may ride with the next commit (AckOptions.lazy).
    ack: (agent, messageId, from) => store.ack(agent, messageId, from, { lazy: true }),
    track,
    close() {
      closed ??= (async () => {
        closing = true
        clearInterval(expireTimer)
        unwatch?.()
        if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve))
        for (const close of [...connections]) {
          try {
            close()
          } catch (error) {
            onError(error)
          }
        }
        connections.clear()
        subscriptions.close()
        await ready
      })()
      return closed
    },
  }
}
