/**
 * The relay's Prometheus metrics: a Registry per relay (never the global one: two relays in one
 * process keep their own counts) on a listener of its own, never the relay's port. Store gauges
 * are read per scrape, each read bounded so a slow store cannot hang a scrape.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { RelayStore } from '../store/types.js'
import { within } from './health.js'
import { knownCode } from './relay-report.js'
import type { DeliveryMode, RateLimitScope, RelayObserver, StreamKind } from './types.js'

/** The metrics of one relay: pass it as the relay's `observer`, serve `registry`. */
export class RelayMetrics implements RelayObserver {
  readonly registry = new Registry()
  readonly #publishes = this.#counter(
    'publishes_total',
    'code',
    'Publishes answered, by outcome: accepted, duplicate (202 without storing), or the PROFILE error code',
  )
  readonly #deliveries = this.#counter(
    'deliveries_total',
    'mode',
    'Messages handed to a client, by mode: ws, sse, webhook (taken with 2xx), retrieve',
  )
  readonly #authFailures = this.#counter(
    'auth_failures_total',
    'code',
    'Requests refused for agent auth or a message signature, by PROFILE 401/403 code',
  )
  readonly #rateLimited = this.#counter(
    'rate_limited_total',
    'scope',
    'Answers 429 rate_limited, by limit: address, reads, sender, streams, subscriptions',
  )
  readonly #lostAfterPush = new Counter({
    name: 'agentmsg_relay_commit_failed_after_push_total',
    help: 'Publishes pushed to streams before their commit, whose commit then failed (the publisher got no 202 and retries; receivers drop the second copy as a replay)',
    registers: [this.registry],
  })
  readonly #openStreams = new Gauge({
    name: 'agentmsg_relay_open_streams',
    help: 'Open SSE and WebSocket streams',
    labelNames: ['kind'],
    registers: [this.registry],
  })
  readonly #commits = new Histogram({
    name: 'agentmsg_relay_store_commit_seconds',
    help: 'Time from a store write (publish, ack) to its durable commit',
    labelNames: ['op'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  })

  /** `store` is read on each scrape; a read slower than `collectTimeoutMs` keeps the last value. */
  constructor(store: RelayStore, collectTimeoutMs = 2000) {
    // Zeros for the labels every relay has, so rates start from a sample.
    for (const code of ['accepted', 'duplicate']) this.#publishes.inc({ code }, 0)
    for (const mode of ['ws', 'sse', 'webhook', 'retrieve']) this.#deliveries.inc({ mode }, 0)
    for (const scope of ['address', 'reads', 'sender', 'streams', 'subscriptions']) {
      this.#rateLimited.inc({ scope }, 0)
    }
    for (const kind of ['sse', 'ws']) this.#openStreams.set({ kind }, 0)
    // One relay-wide usage read per scrape, shared by the two gauges collected together.
    let usage: Promise<{ messages: number; bytes: number } | undefined> | undefined
    const read = () =>
      (usage ??= within(collectTimeoutMs, () => store.usage()).finally(() => (usage = undefined)))
    const gauge = (name: string, help: string, value: () => Promise<number | undefined>) =>
      new Gauge({
        name: `agentmsg_relay_${name}`,
        help,
        registers: [this.registry],
        async collect() {
          const n = await value()
          if (n !== undefined) this.set(n)
        },
      })
    const relayWide = 'relay-wide (a topic message once)'
    gauge(
      'stored_bytes',
      `Bytes stored ${relayWide}, as counted against the storage cap`,
      async () => (await read())?.bytes,
    )
    gauge('stored_messages', `Messages stored ${relayWide}`, async () => (await read())?.messages)
    const count = store.countMailboxes?.bind(store)
    if (count === undefined) return
    gauge('mailboxes', 'Mailboxes (opened by a subscription, open or closed since)', () =>
      within(collectTimeoutMs, count),
    )
  }

  #counter<L extends string>(name: string, label: L, help: string): Counter<L> {
    const registers = [this.registry]
    return new Counter({ name: `agentmsg_relay_${name}`, help, labelNames: [label], registers })
  }

  readonly published = (outcome: string) => {
    const code = outcome === 'accepted' || outcome === 'duplicate' ? outcome : knownCode(outcome)
    this.#publishes.inc({ code })
  }
  readonly authFailed = (code: string) => this.#authFailures.inc({ code: knownCode(code) })
  readonly rateLimited = (scope: RateLimitScope) => this.#rateLimited.inc({ scope })
  readonly delivered = (mode: DeliveryMode, n: number) => this.#deliveries.inc({ mode }, n)
  readonly streamOpened = (kind: StreamKind) => this.#openStreams.inc({ kind })
  readonly streamClosed = (kind: StreamKind) => this.#openStreams.dec({ kind })
  readonly commitFailedAfterPush = () => this.#lostAfterPush.inc()
  readonly storeWrite = (op: 'publish' | 'ack', s: number) => this.#commits.observe({ op }, s)
}

/** The metrics listener could not listen (its port in use, say). */
export class MetricsListenError extends Error {
  override readonly name = 'MetricsListenError'
  readonly code: string | undefined
  constructor(host: string, port: number, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code
    const what = `metrics listener on ${host}:${port}: ${(cause as Error)?.message ?? cause}`
    super(code === 'EADDRINUSE' ? `metrics port ${port} on ${host} is in use` : what, { cause })
    this.code = code
  }
}

/** A running metrics listener: `http://host:port/metrics`. */
export type MetricsListener = { url: string; host: string; port: number; close(): Promise<void> }

/**
 * Serve `GET /metrics` over plain HTTP on `host:port` (0 picks a free port), without auth, as
 * Prometheus scrapes: keep `host` on loopback or a private network.
 */
export async function listenMetrics(
  metrics: RelayMetrics,
  options: { host?: string; port: number },
) {
  const host = options.host ?? '127.0.0.1'
  // A scrape is one small request: slow or idle clients are cut early.
  const timeouts = { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000 }
  const server = createServer(timeouts, (req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      return
    }
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType })
        res.end(req.method === 'HEAD' ? undefined : text)
      },
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    )
  })
  await once(server.listen(options.port, host), 'listening').catch((error: unknown) => {
    throw new MetricsListenError(host, options.port, error)
  })
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    host,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
