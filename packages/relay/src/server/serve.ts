/**
 * The relay on `node:https` (TLS ≥ 1.2) with its SQLite store in a data directory, the
 * WebSocket endpoint on the `upgrade` event, the slow-client timeouts of PROFILE §6 (headers
 * in 10 s, a body 30 s after them, else the connection is closed), and a graceful close; with
 * its operations (issue 14): Prometheus metrics on a listener of their own, JSON logs.
 */
import { mkdir } from 'node:fs/promises'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { normalizeAgentUrl } from '@agentmsg/core'
import {
  createAddressPolicy,
  getRequestListener,
  type SlowClientTimeouts,
  slowClientServerOptions,
} from '@agentmsg/transport-https/node'
import type { RelayQuota } from '../store/common.js'
import { sqliteRelayStore } from '../store/sqlite.js'
import type { RelayStore } from '../store/types.js'
import { createRelayHandler } from './handler.js'
import { NODE_PUBLISH, type NodePublishTarget, nodePublishRoute } from './node-publish.js'
import { createRelayLogger, logObserver, type RelayLogger } from './relay-log.js'
import { listenMetrics, type MetricsListener, RelayMetrics } from './relay-metrics.js'
import { combineObservers } from './relay-report.js'
import type { RelayHandlerOptions, RelayRequestInfo, RelayServerHandler } from './types.js'
import { createRelayWebSocket, type RelayWebSocketOptions } from './ws.js'

/** Options of {@link serveRelay}. */
export interface ServeRelayOptions
  extends Omit<RelayHandlerOptions, 'baseUrl' | 'store' | 'addressPolicy'>,
    SlowClientTimeouts {
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
  /** Private addresses, ranges and host names outbound requests may reach (webhooks, identities). */
  allowPrivate?: string[]
  /** Quotas. @default 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB in all */
  quota?: RelayQuota
  /** A store to use instead of `<dataDir>/relay.sqlite` (closed by `close()`). */
  store?: RelayStore
  /** On close, connections still open after this many ms are cut. @default 10_000 */
  closeTimeoutMs?: number
  ws?: RelayWebSocketOptions
  /**
   * Answers requests before the relay does, e.g. a page served from the relay's own origin
   * (`npm start`'s browser demo). A `Response` is sent as is; `undefined` hands the request to
   * the relay (so it must not read the body of a request it passes on). It sees no WebSocket
   * upgrades and is not rate limited by the relay: keep it to cheap, fixed answers.
   */
  intercept?: (request: Request) => Response | undefined | Promise<Response | undefined>
  /**
   * Prometheus metrics on their own plain-HTTP listener (`GET /metrics`), never on the relay's
   * port. `host` @default '127.0.0.1' (keep it on loopback or a private network). Off unless
   * given.
   */
  metrics?: { port: number; host?: string }
  /**
   * A pino logger: one JSON line per refused request (relay-log.ts), and `onError` when none is
   * given. @default a logger on stderr when `logLevel` is given, else no request logs
   */
  logger?: RelayLogger
  /** Level of the default logger (fatal, error, warn, info, debug, trace, silent). */
  logLevel?: string
}

/** A running relay. */
export interface RelayServer {
  /** The public base URL. */
  url: string
  port: number
  handler: RelayServerHandler
  store: RelayStore
  /** The metrics listener, when `metrics` was given. */
  metrics?: MetricsListener
  /** The logger, when one was given or `logLevel` asked for one. */
  logger?: RelayLogger
  /**
   * Stop accepting connections, let publishes in flight be stored, end streams and sockets,
   * then close the store.
   */
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
  const {
    host = '127.0.0.1',
    port = 0,
    dataDir,
    publicUrl,
    tls,
    allowPrivate,
    quota,
    store: givenStore,
    closeTimeoutMs = 10_000,
    ws: wsOptions,
    intercept,
    headersTimeoutMs,
    bodyTimeoutMs,
    metrics: metricsOptions,
    logger: givenLogger,
    logLevel,
    ...handlerOptions
  } = options
  if (!tls) throw new TypeError('serveRelay needs tls {cert, key}: https only, also in development')
  const timeouts = slowClientServerOptions({
    ...(headersTimeoutMs !== undefined ? { headersTimeoutMs } : {}),
    ...(bodyTimeoutMs !== undefined ? { bodyTimeoutMs } : {}),
  })
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  const store =
    givenStore ??
    sqliteRelayStore({ path: path.join(dataDir, 'relay.sqlite'), ...(quota ? { quota } : {}) })
  const server = createServer({
    cert: tls.cert,
    key: tls.key,
    minVersion: 'TLSv1.2',
    ...timeouts.tls,
  })
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    await store.close()
    throw error
  }
  const actualPort = (server.address() as AddressInfo).port
  const hostPart = host.includes(':') ? `[${host}]` : host
  const url = normalizeAgentUrl(publicUrl ?? `https://${hostPart}:${actualPort}`)
  const logger =
    givenLogger ?? (logLevel !== undefined ? createRelayLogger({ level: logLevel }) : undefined)
  const onError =
    handlerOptions.onError ??
    (logger
      ? (e: unknown) => logger.error({ err: e }, 'relay error')
      : (e: unknown) => console.error('agentmsg relay:', e))
  const metrics = metricsOptions ? new RelayMetrics({ store }) : undefined
  const observer = combineObservers(
    handlerOptions.observer,
    metrics,
    logger ? logObserver(logger) : undefined,
  )
  let handler: RelayServerHandler | undefined
  let metricsListener: MetricsListener | undefined
  try {
    handler = createRelayHandler({
      ...handlerOptions,
      baseUrl: url,
      store,
      addressPolicy: createAddressPolicy({ allow: allowPrivate ?? [] }),
      onError,
      ...(observer ? { observer } : {}),
    })
    if (metrics && metricsOptions) metricsListener = await listenMetrics(metrics, metricsOptions)
  } catch (error) {
    await handler?.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await store.close()
    throw error
  }
  const wss = createRelayWebSocket(handler, {
    onError,
    ...(observer ? { observer } : {}),
    ...wsOptions,
  })
  const basePath = new URL(url).pathname.replace(/\/$/, '')
  const served = intercept
    ? {
        fetch: async (request: Request, info?: RelayRequestInfo) =>
          (await intercept(request)) ?? handler.fetch(request, info),
      }
    : handler
  const generic = getRequestListener(served, { onError, bodyTimeoutMs: timeouts.bodyTimeoutMs })
  // Publishes skip the web Request/Response (node-publish.ts); an `intercept` sees every request.
  const publishRoute =
    intercept === undefined && NODE_PUBLISH in handler
      ? nodePublishRoute((handler as { [NODE_PUBLISH]: NodePublishTarget })[NODE_PUBLISH], {
          bodyTimeoutMs: timeouts.bodyTimeoutMs,
          onError,
        })
      : undefined
  server.on(
    'request',
    publishRoute ? (req, res) => publishRoute(req, res) || generic(req, res) : generic,
  )
  server.on('upgrade', (req, socket, head) => {
    const target = req.url ?? ''
    const q = target.indexOf('?')
    const p = q < 0 ? target : target.slice(0, q)
    if (p !== `${basePath}/relay/ws`) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
      return
    }
    wss.handleUpgrade(req, socket, head)
  })
  server.on('tlsClientError', () => undefined)

  let closing: Promise<void> | undefined
  return {
    url,
    port: actualPort,
    handler,
    store,
    ...(metricsListener ? { metrics: metricsListener } : {}),
    ...(logger ? { logger } : {}),
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        const timer = setTimeout(() => server.closeAllConnections(), closeTimeoutMs)
        timer.unref()
        try {
          await handler.close()
          await wss.close()
          server.closeIdleConnections()
          await closed
        } finally {
          clearTimeout(timer)
          await store.close()
          // Last: a scrape during the drain still sees the final counts.
          await metricsListener?.close()
        }
      })()
      return closing
    },
  }
}
