/**
 * The relay on `node:https` through the one Node adapter: its SQLite store in a data directory,
 * the WebSocket endpoint, PROFILE §6's slow-client timeouts, a graceful close, and metrics and
 * JSON logs, each loaded only when asked for.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { normalizeAgentUrl } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { serveHttps } from '@agentmsg/transport-https/node'
import type { RelayQuota } from '../store/common.js'
import type { RelayStore } from '../store/types.js'
import { createRelayHandler } from './handler.js'
import type { RelayLogger } from './relay-log.js'
import type { MetricsListener } from './relay-metrics.js'
import { combineObservers } from './relay-report.js'
import type { RelayHandlerOptions, RelayServerHandler } from './types.js'
import { createRelayWebSocket, type RelayWebSocketOptions } from './ws.js'

/** Options of {@link serveRelay}. */
export interface ServeRelayOptions
  extends Omit<RelayHandlerOptions, 'baseUrl' | 'store' | 'addressPolicy'> {
  /** Address to listen on. @default '127.0.0.1' */
  host?: string
  /** Port; 0 picks a free one. @default 0 */
  port?: number
  /** Directory of the relay's data (`relay.sqlite`), created 0700 when missing. */
  dataDir: string
  /** Public base URL. @default https://<host>:<port> */
  publicUrl?: string
  /** Certificate and key, PEM. */
  tls: { cert: string | Buffer; key: string | Buffer }
  /** Request headers must be in within this (PROFILE §6). @default 10_000 */
  headersTimeoutMs?: number
  /** A body must be in within this of its headers (PROFILE §6). @default 30_000 */
  bodyTimeoutMs?: number
  /** Private addresses, ranges and host names outbound requests may reach (webhooks, identities). */
  allowPrivate?: string[]
  /** Quotas of the SQLite store. @default PROFILE §9's */
  quota?: RelayQuota
  /** A store to use instead of `<dataDir>/relay.sqlite` (closed by `close()`). */
  store?: RelayStore
  /** On close, connections still open after this many ms are cut. @default 10_000 */
  closeTimeoutMs?: number
  /** The WebSocket endpoint: auth timeout, stall timeout, frame cap. */
  ws?: RelayWebSocketOptions
  /**
   * Answers requests before the relay (e.g. a demo page); `undefined` passes one on, its body
   * unread. Sees no WebSocket upgrades, is not rate limited: keep it to cheap, fixed answers.
   */
  intercept?: (request: Request) => Response | undefined | Promise<Response | undefined>
  /** Prometheus metrics on a plain-HTTP listener of their own (`host` @default 127.0.0.1). */
  metrics?: { port: number; host?: string }
  /** A pino logger: a line per refused request, and `onError`. @default one when `logLevel` */
  logger?: RelayLogger
  /** Level of the default logger (fatal, error, warn, info, debug, trace, silent). */
  logLevel?: string
  /** Where the default logger writes its lines. @default stderr, synchronously */
  logDestination?: { write(line: string): void }
}

/** A running relay. */
export interface RelayServer {
  /** The public base URL. */
  url: string
  /** The port it listens on (the one picked, for `port: 0`). */
  port: number
  /** The web-standard handler it serves. */
  handler: RelayServerHandler
  /** The store it keeps messages in. */
  store: RelayStore
  /** The metrics listener (`url`, `host`, `port`), when `metrics` was given. */
  metrics?: MetricsListener
  /** The logger, when one was given or `logLevel` asked for one. */
  logger?: RelayLogger
  /** Stop accepting, store the publishes in flight, end streams and sockets, close the store. */
  close(): Promise<void>
}

/**
 * Serve a relay over HTTPS.
 *
 * @example
 * const { cert, key } = await createDevCertificate()
 * const relay = await serveRelay({ port: 8443, dataDir: './relay-data', tls: { cert, key } })
 */
export async function serveRelay(options: ServeRelayOptions): Promise<RelayServer> {
  const { dataDir, quota, logLevel, logDestination } = options
  let onError = options.onError ?? ((e: unknown) => console.error('agentmsg relay:', e))
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  // Loaded only when used: a relay on another store never loads better-sqlite3.
  const store =
    options.store ??
    (await import('../store/sqlite.js')).sqliteRelayStore({
      path: path.join(dataDir, 'relay.sqlite'),
      quota,
    })
  // The handler is made once the port is known (the base URL may name it); until then the
  // adapter waits for it.
  let started!: (relay: Pick<RelayServerHandler, 'fetch' | 'close'>) => void
  const ready = new Promise<Parameters<typeof started>[0]>((resolve) => (started = resolve))
  let https: Awaited<ReturnType<typeof serveHttps>>
  try {
    https = await serveHttps(
      {
        fetch: async (request, info) => (await ready).fetch(request, info),
        close: async () => (await ready).close(),
      },
      { ...options, onError: (e) => onError(e) },
    )
  } catch (error) {
    await store.close()
    throw error
  }
  const url = normalizeAgentUrl(options.publicUrl ?? https.url)
  let relay: RelayServerHandler | undefined
  let logger = options.logger
  try {
    // pino and prom-client are loaded only when logs or metrics are asked for.
    const logs = logger || logLevel !== undefined ? await import('./relay-log.js') : undefined
    logger ??= logs?.createRelayLogger({ level: logLevel, destination: logDestination })
    const log = logger
    if (log && !options.onError) onError = (e) => log.error({ err: e }, 'relay error')
    const metricsModule = options.metrics ? await import('./relay-metrics.js') : undefined
    const metrics = metricsModule && new metricsModule.RelayMetrics(store)
    const observer = combineObservers(options.observer, metrics, log && logs?.logObserver(log))
    const handler = createRelayHandler({
      ...options,
      baseUrl: url,
      store,
      addressPolicy: createAddressPolicy({ allow: options.allowPrivate ?? [] }),
      onError,
      observer,
    })
    relay = handler
    const metricsListener =
      metrics && (await metricsModule.listenMetrics(metrics, options.metrics!))
    const { stallTimeoutMs } = options
    const wss = createRelayWebSocket(handler, { onError, observer, stallTimeoutMs, ...options.ws })
    const basePath = new URL(url).pathname.replace(/\/$/, '')
    const { intercept } = options
    started({
      fetch: async (request, info) =>
        (intercept && (await intercept(request))) || handler.fetch(request, info),
      close: async () => {
        await handler.close()
        await wss.close()
      },
    })
    https.server.on('upgrade', (req, socket, head) => {
      if ((req.url ?? '').split('?')[0] === `${basePath}/relay/ws`) {
        return wss.handleUpgrade(req, socket, head)
      }
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
    })
    https.server.on('tlsClientError', () => undefined)
    let closing: Promise<void> | undefined
    return {
      url,
      port: https.port,
      handler,
      store,
      ...(metricsListener && { metrics: metricsListener }),
      ...(logger && { logger }),
      close() {
        closing ??= https.close().finally(async () => {
          await store.close()
          // Last: a scrape during the drain still sees the final counts.
          await metricsListener?.close()
        })
        return closing
      },
    }
  } catch (error) {
    started({ fetch: async () => new Response(null, { status: 503 }), close: async () => {} })
    await relay?.close()
    await https.close()
    await store.close()
    throw error
  }
}
