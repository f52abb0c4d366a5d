/**
 * Node adapter for web-standard handlers such as the inbox, shaped like `@hono/node-server`'s
 * `getRequestListener`: `IncomingMessage` → `Request` with a streaming body, `Response` →
 * `ServerResponse`. Node only; it is exported from the `./node` subpath.
 *
 * A handler made by `createInboxHandler` is driven without the `Request`/`Response` objects:
 * the same pipeline reads the `IncomingMessage` directly (streamed, counted, never buffered past
 * the cap) and its answer is written straight to the socket (node-exchange.ts). Building those
 * objects and their web streams costs about as much as the whole pipeline apart from the
 * signature check.
 *
 * Both paths close a connection whose request body is not in 30 s after its headers, and
 * `serveInbox` sets the headers and handshake timeouts (node-timeouts.ts, PROFILE §6).
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { type ExchangeHandler, HANDLE_EXCHANGE } from './inbox/exchange.js'
import type { InboxHandler, InboxRequestInfo } from './inbox/types.js'
import { nodeExchange, writeReply } from './node-exchange.js'
import {
  BODY_TIMEOUT_MS,
  bodyDeadline,
  type SlowClientTimeouts,
  slowClientServerOptions,
} from './node-timeouts.js'

export type { SlowClientTimeouts } from './node-timeouts.js'
export { slowClientServerOptions } from './node-timeouts.js'

/** Anything with a web-standard `fetch(request, info)`: an inbox handler, a Hono app, … */
export interface FetchHandler {
  fetch(request: Request, info?: InboxRequestInfo): Response | Promise<Response>
}

/** Options for {@link getRequestListener}. */
export interface RequestListenerOptions {
  /**
   * Scheme of the URLs given to the handler. Only the path is used for routing.
   * @default 'https'
   */
  scheme?: 'https' | 'http'
  /** Called with a handler that threw or a response that could not be written. @default console.error */
  onError?: (error: unknown) => void
  /**
   * A request body must be all in this long after its headers, else the connection is closed
   * (PROFILE §6: slow clients cannot hold a read slot longer).
   * @default 30_000
   */
  bodyTimeoutMs?: number
}

/** The request body as a web stream: pulled from the socket as it is read, never buffered whole. */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let cancelled = false
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on('data', (chunk: Buffer) => {
          if (cancelled) return
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          // Back-pressure: a paused request stops reading the socket, so TCP stops the sender.
          if ((controller.desiredSize ?? 0) <= 0) req.pause()
        })
        req.on('end', () => {
          if (!cancelled) controller.close()
        })
        req.on('close', () => {
          if (!cancelled && !req.complete)
            controller.error(new Error('the client aborted the request'))
        })
        req.on('error', (error) => {
          if (!cancelled) controller.error(error)
        })
      },
      pull() {
        req.resume()
      },
      cancel() {
        // Stop reading. The response then closes the connection (see writeResponse), which is
        // what ends an oversized upload early: the sender cannot push more than the socket
        // buffers hold.
        cancelled = true
        req.pause()
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  )
}

const HOST_RE = /^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$/

function toRequest(req: IncomingMessage, scheme: string, signal?: AbortSignal): Request {
  const host = req.headers.host
  const base = `${scheme}://${host !== undefined && HOST_RE.test(host) ? host : 'localhost'}`
  const url = new URL(req.url ?? '/', base)
  const raw = req.rawHeaders
  const headers: Array<[string, string]> = []
  for (let i = 0; i < raw.length; i += 2) headers.push([raw[i]!, raw[i + 1]!])
  const method = req.method ?? 'GET'
  const hasBody = method !== 'GET' && method !== 'HEAD'
  const init: RequestInit & { duplex?: 'half' } = { method, headers }
  // request.signal aborts when the client goes away, so long-lived responses (SSE) stop.
  if (signal) init.signal = signal
  if (hasBody) {
    init.body = bodyStream(req)
    init.duplex = 'half' // required by fetch for a streaming request body
  }
  return new Request(url, init)
}

async function writeResponse(
  req: IncomingMessage,
  res: ServerResponse,
  response: Response,
): Promise<void> {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) headers['set-cookie'] = cookies
  // The handler answered before the request body was all in (413, 429, 415, …): close the
  // connection after this response rather than read, say, the rest of a 50 MiB upload.
  if (!req.complete) headers.connection = 'close'
  res.writeHead(response.status, headers)
  if (response.body === null || req.method === 'HEAD') {
    res.end()
    return
  }
  const reader = response.body.getReader()
  // The client may go away at any time, also while the handler's stream waits for data (SSE):
  // cancelling the reader ends a pending read, and nothing waits for a 'close' already past.
  const onClose = () => {
    reader.cancel().catch(() => {})
  }
  res.once('close', onClose)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done || res.destroyed) break
      if (!res.write(value) && !res.destroyed) {
        // Both listeners go once either fires: a long stream (SSE) waits for drain many times.
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done)
            res.off('close', done)
            resolve()
          }
          res.once('drain', done)
          res.once('close', done)
        })
      }
      if (res.destroyed) break
    }
  } finally {
    res.off('close', onClose)
    if (res.destroyed) await reader.cancel().catch(() => {})
    else res.end()
  }
}

function isExchangeHandler(handler: unknown): handler is ExchangeHandler {
  return typeof (handler as Partial<ExchangeHandler>)[HANDLE_EXCHANGE] === 'function'
}

/**
 * A Node `(req, res)` listener for any web-standard handler, usable with `node:https`,
 * `node:http` (behind a TLS-terminating proxy) or a framework that accepts listeners. The
 * socket's remote address is passed as `clientAddress`. The request body is streamed; when the
 * handler answers before the body was all received (413, 429, 415, …) the connection is closed
 * after the answer instead of reading the rest, and a body not in `bodyTimeoutMs` after its
 * headers closes the connection. Handlers from `createInboxHandler` take the direct path
 * described at the top of this module, with the same behaviour. Give the server the headers
 * and handshake timeouts too ({@link slowClientServerOptions}).
 *
 * @example
 * import { createServer } from 'node:https'
 * const inbox = createInboxHandler({ … })
 * const t = slowClientServerOptions({})
 * createServer({ cert, key, minVersion: 'TLSv1.2', ...t.tls }, getRequestListener(inbox)).listen(8443)
 */
export function getRequestListener(
  handler: FetchHandler,
  options: RequestListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const scheme = options.scheme ?? 'https'
  const bodyTimeoutMs = options.bodyTimeoutMs ?? BODY_TIMEOUT_MS
  const onError = options.onError ?? ((error: unknown) => console.error('agentmsg server:', error))
  const fail = (res: ServerResponse, status: number, code: string, message: string) => {
    if (res.headersSent) {
      res.destroy()
      return
    }
    const body = JSON.stringify({ status: 'error', code, message })
    res.writeHead(status, {
      'content-type': 'application/json',
      'access-control-allow-origin': '*',
      connection: 'close',
    })
    res.end(body)
  }
  if (isExchangeHandler(handler)) {
    return (req, res) => {
      // A connection already gone has no address and nobody to answer.
      if (req.socket.destroyed) return
      bodyDeadline(req, res, bodyTimeoutMs)
      handler[HANDLE_EXCHANGE](nodeExchange(req)).then(
        (reply) => writeReply(req, res, reply),
        (error: unknown) => {
          onError(error)
          fail(res, 500, 'internal_error', 'internal error')
        },
      )
    }
  }
  return (req, res) => {
    if (req.socket.destroyed) return
    bodyDeadline(req, res, bodyTimeoutMs)
    let request: Request
    const aborter = new AbortController()
    res.once('close', () => {
      if (!res.writableFinished) aborter.abort(new Error('the client closed the connection'))
    })
    try {
      request = toRequest(req, scheme, aborter.signal)
    } catch {
      fail(res, 400, 'invalid_format', 'the request could not be read')
      return
    }
    const info: InboxRequestInfo = {}
    if (req.socket.remoteAddress !== undefined) info.clientAddress = req.socket.remoteAddress
    Promise.resolve()
      .then(() => handler.fetch(request, info))
      .then((response) => writeResponse(req, res, response))
      .catch((error: unknown) => {
        onError(error)
        fail(res, 500, 'internal_error', 'internal error')
      })
  }
}

/** Options for {@link serveInbox}. */
export interface ServeInboxOptions extends SlowClientTimeouts {
  /** Port to listen on; 0 picks a free one (see the result's `port`). @default 0 */
  port?: number
  /** Address to listen on. @default '127.0.0.1' */
  host?: string
  /**
   * Certificate and key, PEM. TLS 1.2 is the minimum (PROFILE §6). For development use
   * `createDevCertificate()`; clients then pass its `ca` (the development CA) as their CA.
   * @default undefined — required unless `insecureHttpBehindProxy` is set
   */
  tls?: { cert: string | Buffer; key: string | Buffer }
  /**
   * Listen on plain http. Only for a server behind a TLS-terminating reverse proxy whose
   * public base URL is https (PROFILE §6); list that proxy in the handler's `trustedProxies`
   * so `X-Forwarded-For` is believed. Never expose such a listener directly.
   * @default false
   */
  insecureHttpBehindProxy?: boolean
  /** On `close()`, connections still open after this many ms are cut. @default 10_000 */
  closeTimeoutMs?: number
  /** Errors of the listener (a handler that threw). @default console.error */
  onError?: (error: unknown) => void
}

/** A running server. */
export interface InboxServer {
  /** Base URL, e.g. `https://127.0.0.1:8443`. */
  url: string
  port: number
  /**
   * Stop accepting connections, let requests in flight finish, and drain the handler's queue
   * (every accepted message processed).
   */
  close(): Promise<void>
}

/**
 * Serve an inbox handler over HTTPS (TLS ≥ 1.2) with `node:https`.
 *
 * @example
 * const { cert, key } = await createDevCertificate()
 * const server = await serveInbox(inbox, { port: 8443, tls: { cert, key } })
 * // … later
 * await server.close()
 *
 * @example
 * // The same handler in other runtimes and frameworks:
 * // Hono:  app.mount('/', inbox.fetch)
 * // Deno:  Deno.serve((req, info) => inbox.fetch(req, { clientAddress: info.remoteAddr.hostname }))
 * // Bun:   Bun.serve({ fetch: (req, srv) => inbox.fetch(req, { clientAddress: srv.requestIP(req)?.address }) })
 */
export async function serveInbox(
  handler: InboxHandler,
  options: ServeInboxOptions = {},
): Promise<InboxServer> {
  const insecure = options.insecureHttpBehindProxy === true
  if (!options.tls && !insecure) {
    throw new TypeError(
      'serveInbox needs tls {cert, key}, or insecureHttpBehindProxy: true behind a TLS proxy',
    )
  }
  const timeouts = slowClientServerOptions(options)
  const listener = getRequestListener(handler, {
    scheme: 'https', // behind the proxy the public URL is https too
    bodyTimeoutMs: timeouts.bodyTimeoutMs,
    ...(options.onError ? { onError: options.onError } : {}),
  })
  const server =
    options.tls && !insecure
      ? createHttpsServer(
          { cert: options.tls.cert, key: options.tls.key, minVersion: 'TLSv1.2', ...timeouts.tls },
          listener,
        )
      : createHttpServer(timeouts.http, listener)
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  const hostPart = host.includes(':') ? `[${host}]` : host
  let closing: Promise<void> | undefined
  return {
    url: `${insecure ? 'http' : 'https'}://${hostPart}:${port}`,
    port,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        const timer = setTimeout(
          () => server.closeAllConnections(),
          options.closeTimeoutMs ?? 10_000,
        )
        timer.unref()
        await handler.close()
        await closed
        clearTimeout(timer)
      })()
      return closing
    },
  }
}
