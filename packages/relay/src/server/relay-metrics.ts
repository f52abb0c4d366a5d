/**
 * The relay's Prometheus metrics (issue 14), with `prom-client`: one Registry per relay (never
 * the global one, so two relays in one process keep their own counts), served by a listener of
 * its own that the operator places (loopback by default); the relay's HTTPS port never serves
 * them. Metric names start with `agentmsg_relay_`.
 *
 * Counters and the histogram are updated as the relay reports (it is a {@link RelayObserver});
 * the store gauges (mailboxes, bytes and messages stored) are read from the store on each
 * scrape, each read bounded by a timeout so a slow store cannot hang a scrape.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { RelayStore } from '../store/types.js'
import { knownCode } from './relay-report.js'
import type { DeliveryMode, RateLimitScope, RelayObserver, StreamKind } from './types.js'

const PREFIX = 'agentmsg_relay_'
const MODES: DeliveryMode[] = ['ws', 'sse', 'webhook', 'retrieve']
const SCOPES: RateLimitScope[] = ['address', 'reads', 'sender', 'streams', 'subscriptions']
const KINDS: StreamKind[] = ['sse', 'ws']

export interface RelayMetricsOptions {
  /** The relay's store, read on each scrape for the store gauges. */
  store?: RelayStore
  /** A store read slower than this leaves its gauges at their last values. @default 2000 */
  collectTimeoutMs?: number
}

/** A store read, or undefined when it failed or took longer than `ms`. */
async function within<T>(ms: number, read: () => Promise<T>): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms)
    timer.unref?.()
  })
  try {
    return await Promise.race([read().catch(() => undefined), late])
  } finally {
    clearTimeout(timer)
  }
}

/** The metrics of one relay: pass it as the relay's `observer`, serve `registry`. */
export class RelayMetrics implements RelayObserver {
  readonly registry = new Registry()
  readonly #publishes: Counter<'code'>
  readonly #deliveries: Counter<'mode'>
  readonly #authFailures: Counter<'code'>
  readonly #rateLimited: Counter<'scope'>
  readonly #openStreams: Gauge<'kind'>
  readonly #commits: Histogram<'op'>
  #usage: Promise<{ messages: number; bytes: number } | undefined> | undefined

  constructor(options: RelayMetricsOptions = {}) {
    const registers = [this.registry]
    this.#publishes = new Counter({
      name: `${PREFIX}publishes_total`,
      help: 'Publishes answered, by outcome: accepted, duplicate (202 without storing), or the PROFILE error code',
      labelNames: ['code'],
      registers,
    })
    this.#deliveries = new Counter({
      name: `${PREFIX}deliveries_total`,
      help: 'Messages handed to a client, by mode: ws, sse, webhook (taken with 2xx), retrieve',
      labelNames: ['mode'],
      registers,
    })
    this.#authFailures = new Counter({
      name: `${PREFIX}auth_failures_total`,
      help: 'Requests refused for agent auth or a message signature, by PROFILE 401/403 code',
      labelNames: ['code'],
      registers,
    })
    this.#rateLimited = new Counter({
      name: `${PREFIX}rate_limited_total`,
      help: 'Answers 429 rate_limited, by limit: address, reads, sender, streams, subscriptions',
      labelNames: ['scope'],
      registers,
    })
    this.#openStreams = new Gauge({
      name: `${PREFIX}open_streams`,
      help: 'Open SSE and WebSocket streams',
      labelNames: ['kind'],
      registers,
    })
    this.#commits = new Histogram({
      name: `${PREFIX}store_commit_seconds`,
      help: 'Time from a store write (publish, ack) to its durable commit',
      labelNames: ['op'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    })
    // Zeros for the labels every relay has, so rates start from a sample.
    for (const code of ['accepted', 'duplicate']) this.#publishes.inc({ code }, 0)
    for (const mode of MODES) this.#deliveries.inc({ mode }, 0)
    for (const scope of SCOPES) this.#rateLimited.inc({ scope }, 0)
    for (const kind of KINDS) this.#openStreams.set({ kind }, 0)
    if (options.store !== undefined) this.#storeGauges(options.store, options.collectTimeoutMs)
  }

  #storeGauges(store: RelayStore, timeoutMs = 2000): void {
    const registers = [this.registry]
    // One relay-wide usage read per scrape, shared by the two gauges collected together.
    const usage = () => {
      this.#usage ??= within(timeoutMs, () => store.usage()).finally(() => {
        this.#usage = undefined
      })
      return this.#usage
    }
    new Gauge({
      name: `${PREFIX}stored_bytes`,
      help: 'Bytes stored relay-wide (a topic message once), as counted against the storage cap',
      registers,
      async collect() {
        const u = await usage()
        if (u !== undefined) this.set(u.bytes)
      },
    })
    new Gauge({
      name: `${PREFIX}stored_messages`,
      help: 'Messages stored relay-wide (a topic message once)',
      registers,
      async collect() {
        const u = await usage()
        if (u !== undefined) this.set(u.messages)
      },
    })
    const count = store.countMailboxes?.bind(store)
    if (count === undefined) return
    new Gauge({
      name: `${PREFIX}mailboxes`,
      help: 'Mailboxes (opened by a subscription, open or closed since)',
      registers,
      async collect() {
        const n = await within(timeoutMs, count)
        if (n !== undefined) this.set(n)
      },
    })
  }

  published(outcome: string): void {
    const code = outcome === 'accepted' || outcome === 'duplicate' ? outcome : knownCode(outcome)
    this.#publishes.inc({ code })
  }

  authFailed(code: string): void {
    this.#authFailures.inc({ code: knownCode(code) })
  }

  rateLimited(scope: RateLimitScope): void {
    this.#rateLimited.inc({ scope })
  }

  delivered(mode: DeliveryMode, count: number): void {
    this.#deliveries.inc({ mode }, count)
  }

  streamOpened(kind: StreamKind): void {
    this.#openStreams.inc({ kind })
  }

  streamClosed(kind: StreamKind): void {
    this.#openStreams.dec({ kind })
  }

  storeWrite(op: 'publish' | 'ack', seconds: number): void {
    this.#commits.observe({ op }, seconds)
  }

  /** The text exposition format. */
  metrics(): Promise<string> {
    return this.registry.metrics()
  }
}

/** The metrics listener could not listen (its port in use, say). */
export class MetricsListenError extends Error {
  override readonly name = 'MetricsListenError'
  readonly code: string | undefined
  constructor(
    readonly host: string,
    readonly port: number,
    cause: unknown,
  ) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code
    super(
      code === 'EADDRINUSE'
        ? `metrics port ${port} on ${host} is in use`
        : `metrics listener on ${host}:${port}: ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    )
    this.code = code
  }
}

/** A running metrics listener. */
export interface MetricsListener {
  /** `http://host:port/metrics`. */
  url: string
  host: string
  port: number
  close(): Promise<void>
}

/**
 * Serve `GET /metrics` of `metrics` over plain HTTP on `host:port` (0 picks a free port). Plain
 * HTTP without auth, as Prometheus scrapes: keep `host` on loopback or a private network.
 */
export async function listenMetrics(
  metrics: RelayMetrics,
  options: { host?: string; port: number },
): Promise<MetricsListener> {
  const host = options.host ?? '127.0.0.1'
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      return
    }
    metrics.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType })
        res.end(req.method === 'HEAD' ? undefined : text)
      },
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    )
  })
  // A scrape is one small request: slow or idle clients are cut early.
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  server.keepAliveTimeout = 5_000
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    throw new MetricsListenError(host, options.port, error)
  }
  const port = (server.address() as AddressInfo).port
  const hostPart = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${hostPart}:${port}/metrics`,
    host,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
