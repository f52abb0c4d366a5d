/**
 * Node adapter for web-standard handlers such as the inbox (STYLE pattern 6, shaped like
 * `@hono/node-server`'s `getRequestListener`): `IncomingMessage` → `Request` with a streaming
 * body, `Response` → `ServerResponse`. Node only; it is exported from the `./node` subpath.
 *
 * A handler made by `createInboxHandler` is driven without the `Request`/`Response` objects:
 * the same pipeline reads the `IncomingMessage` directly (streamed, counted, never buffered past
 * the cap) and its answer is written straight to the socket. Building those objects and their
 * web streams costs about as much as the whole pipeline apart from the signature check.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { invalidFormat } from '@agentmsg/core'
import { HANDLE_EXCHANGE, type ExchangeHandler, type InboxExchange } from './inbox/exchange.js'
import type { InboxReply } from './inbox/responses.js'
import type { InboxHandler, InboxRequestInfo } from './inbox/types.js'

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

/** Read the body of `req`, counting as it streams; stop reading once past `limit`. */
function readNodeBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    const done = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('close', onClose)
      req.off('error', onClose)
    }
    const onData = (chunk: Buffer) => {
      total += chunk.length
      if (total > limit) {
        done()
        // Not another byte: the reply closes the connection (see writeReply).
        req.pause()
        resolve(undefined)
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      done()
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total))
    }
    const onClose = () => {
      if (req.complete) return
      done()
      reject(invalidFormat('the request body could not be read'))
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('close', onClose)
    req.on('error', onClose)
  })
}

// RFC 3986 path characters (no `%`) that the WHATWG parser leaves as they are, and segments
// that are not `.` or `..`: such a target is its own path, no URL parse needed.
const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/

function pathOf(url: string): string {
  const query = url.indexOf('?')
  const target = query < 0 ? url : url.slice(0, query)
  if (PLAIN_PATH.test(target) && !DOT_SEGMENT.test(target)) return target
  try {
    // The WHATWG parser, as `fetch` uses: both adapters route the same bytes the same way.
    return new URL(url, 'https://localhost').pathname
  } catch {
    return ''
  }
}

function nodeExchange(req: IncomingMessage): InboxExchange {
  return {
    method: req.method ?? 'GET',
    path: pathOf(req.url ?? '/'),
    header(name) {
      // headersDistinct keeps every copy, joined as web Headers do (a doubled Content-Type
      // must not be read as its first copy).
      const values = req.headersDistinct[name]
      return values === undefined ? null : values.join(', ')
    },
    clientAddress: req.socket.remoteAddress,
    readBody: (limit) => readNodeBody(req, limit),
    discardBody: () => undefined,
  }
}

function writeReply(req: IncomingMessage, res: ServerResponse, reply: InboxReply): void {
  const headers = req.complete ? reply.headers : { ...reply.headers, connection: 'close' }
  res.writeHead(reply.status, headers)
  res.end(req.method === 'HEAD' ? undefined : (reply.body ?? undefined))
}

function isExchangeHandler(handler: unknown): handler is ExchangeHandler {
  return typeof (handler as Partial<ExchangeHandler>)[HANDLE_EXCHANGE] === 'function'
}

/**
 * A Node `(req, res)` listener for any web-standard handler, usable with `node:https`,
 * `node:http` (behind a TLS-terminating proxy) or a framework that accepts listeners. The
 * socket's remote address is passed as `clientAddress`. The request body is streamed; when the
 * handler answers before the body was all received (413, 429, 415, …) the connection is closed
 * after the answer instead of reading the rest. Handlers from `createInboxHandler` take the
 * direct path described at the top of this module, with the same behaviour.
 *
 * @example
 * import { createServer } from 'node:https'
 * const inbox = createInboxHandler({ … })
 * createServer({ cert, key, minVersion: 'TLSv1.2' }, getRequestListener(inbox)).listen(8443)
 */
export function getRequestListener(
  handler: FetchHandler,
  options: RequestListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const scheme = options.scheme ?? 'https'
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
export interface ServeInboxOptions {
  /** Port to listen on; 0 picks a free one (see the result's `port`). @default 0 */
  port?: number
  /** Address to listen on. @default '127.0.0.1' */
  host?: string
  /**
   * Certificate and key, PEM. TLS 1.2 is the minimum (PROFILE §6). For development use
   * `createDevCertificate()`; clients then pass its `cert` as their CA.
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
  const listener = getRequestListener(handler, {
    scheme: 'https', // behind the proxy the public URL is https too
    ...(options.onError ? { onError: options.onError } : {}),
  })
  const server =
    options.tls && !insecure
      ? createHttpsServer(
          { cert: options.tls.cert, key: options.tls.key, minVersion: 'TLSv1.2' },
          listener,
        )
      : createHttpServer(listener)
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
