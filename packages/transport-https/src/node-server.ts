/**
 * The one Node adapter for web-standard handlers (the inbox, the relay), shaped like
 * `@hono/node-server`'s `getRequestListener` (node-request.ts keeps both directions cheap).
 *
 * Slow clients (PROFILE §6): headers within 10 s, a body within 30 s of its headers, else the
 * connection is closed, so a trickling client cannot hold a read slot for Node's default 300 s.
 * Node checks `headersTimeout` itself, but its `requestTimeout` counts from the start of the
 * request: the body's own deadline is a timer per request, `requestTimeout` only the backstop.
 */

import { once } from 'node:events'
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TlsOptions } from 'node:tls'
import { PROFILE } from '@agentmsg/core'
import type { HttpReply } from '@agentmsg/core/server'
import { nodeRequest, writeAnswer } from './node-request.js'

/** Where a handler answers with core's plain `HttpReply`, so no `Response` is built on Node. */
const REPLY = Symbol.for('agentmsg.reply')

/** What the adapter knows of a request and the `Request` does not. */
type RequestInfo = { clientAddress?: string }

/**
 * Anything with a web-standard `fetch(request, info)`: an inbox handler, a relay, a Hono app.
 * A handler whose answers are core's `HttpReply` (the inbox, the relay) may also offer
 * `[Symbol.for('agentmsg.reply')](request, info)`, which the adapter then calls instead.
 */
export interface FetchHandler {
  fetch(request: Request, info?: RequestInfo): Response | Promise<Response>
  [REPLY]?: (request: Request, info?: RequestInfo) => Promise<HttpReply>
  /** Called by {@link HttpsServer.close} once no new connection is taken: drain, stop. */
  close?(): Promise<void>
}

/** Options for {@link getRequestListener}. */
export interface RequestListenerOptions {
  /** Scheme of the URLs given to the handler; only the path is used for routing. @default 'https' */
  scheme?: 'https' | 'http'
  /** A handler that threw, or an answer that could not be written. @default console.error */
  onError?: (error: unknown) => void
  /** A body must be in this long after its headers, else the connection closes (PROFILE §6). */
  bodyTimeoutMs?: number
}

/** Close the connection when the body is not in `timeoutMs` after its headers (now). */
function bodyDeadline(req: IncomingMessage, res: ServerResponse, timeoutMs: number): void {
  const length = req.headers['content-length']
  if (req.complete || !Number.isFinite(timeoutMs)) return
  if (req.headers['transfer-encoding'] === undefined && (!length || length === '0')) return
  const timer = setTimeout(() => req.complete || req.socket.destroy(), timeoutMs)
  timer.unref()
  const clear = () => clearTimeout(timer)
  req.once('end', clear)
  res.once('close', clear)
}

/**
 * A Node `(req, res)` listener for any web-standard handler (`node:https`, `node:http` behind a
 * TLS proxy, frameworks); `clientAddress` is the socket's. An answer given before the body was
 * all in closes the connection after it, and so does a body late by `bodyTimeoutMs`. Give the
 * server the headers and handshake timeouts too, or use {@link serveHttps}, which does.
 * In Express it is middleware, mounted before any body parser; in Fastify, an `onRequest` hook
 * that calls `reply.hijack()` passes it `request.raw, reply.raw` before Fastify parses a body.
 *
 * @example
 * import { createServer } from 'node:https'
 * createServer({ cert, key, minVersion: 'TLSv1.2' }, getRequestListener(inbox)).listen(8443)
 * // Express: app.use('/agents/bob', getRequestListener(inbox)) // basePath '/agents/bob'
 */
export function getRequestListener(
  handler: FetchHandler,
  options: RequestListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const scheme = options.scheme ?? 'https'
  const bodyTimeoutMs = options.bodyTimeoutMs ?? PROFILE.bodyTimeoutMs
  const onError = options.onError ?? ((error: unknown) => console.error('agentmsg server:', error))
  const fail = (res: ServerResponse, status: number, code: string, message: string) => {
    if (res.headersSent) return void res.destroy()
    const headers = { 'content-type': 'application/json', 'access-control-allow-origin': '*' }
    res.writeHead(status, { ...headers, connection: 'close' })
    res.end(JSON.stringify({ status: 'error', code, message }))
  }
  return (req, res) => {
    // A connection already gone (a TLS socket whose TCP side closed) has no address and nobody
    // to answer: not an adapter without addresses.
    const address = req.socket.remoteAddress
    if (req.socket.destroyed || address === undefined) return void req.socket.destroy()
    // A framework's body parser (`express.json()`) that ran first took the bytes the signature
    // covers: a misconfiguration, reported as one rather than answered as a bad signature.
    if (req.readableEnded) {
      onError(new Error('agentmsg: the request body was already read; mount before body parsers'))
      return fail(res, 500, 'internal_error', 'internal error')
    }
    bodyDeadline(req, res, bodyTimeoutMs)
    let request: Request
    try {
      request = nodeRequest(req, res, scheme)
    } catch {
      return fail(res, 400, 'invalid_format', 'the request could not be read')
    }
    const info = { clientAddress: address }
    const answer = handler[REPLY]
    Promise.resolve()
      .then((): Promise<HttpReply | Response> | Response =>
        answer ? answer.call(handler, request, info) : handler.fetch(request, info),
      )
      .then((response) => writeAnswer(req, res, response))
      .catch((error: unknown) => {
        onError(error)
        fail(res, 500, 'internal_error', 'internal error')
      })
  }
}

/** The slow-client timeouts of a server (PROFILE §6). */
export interface SlowClientTimeouts {
  /** Headers, and a TLS handshake, must be in this long, else it closes. @default 10 s */
  headersTimeoutMs?: number
  /** A request's body must be in this long after its headers. @default PROFILE.bodyTimeoutMs (30 s) */
  bodyTimeoutMs?: number
}

function ms(value: number | undefined, fallback: number, name: string): number {
  const v = value ?? fallback
  if (!(Number.isSafeInteger(v) && v > 0))
    throw new RangeError(`${name} must be a positive integer`)
  return v
}

/**
 * Server options that enforce {@link SlowClientTimeouts}. Node checks its timeouts every
 * `connectionsCheckingInterval` (30 s would stretch 10 s to 40): here every second at most.
 */
export function slowClientServerOptions(options: SlowClientTimeouts): {
  http: ServerOptions
  tls: ServerOptions & TlsOptions
  bodyTimeoutMs: number
} {
  const headers = ms(options.headersTimeoutMs, PROFILE.headersTimeoutMs, 'headersTimeoutMs')
  const body = ms(options.bodyTimeoutMs, PROFILE.bodyTimeoutMs, 'bodyTimeoutMs')
  const http: ServerOptions = {
    headersTimeout: headers,
    requestTimeout: headers + body,
    connectionsCheckingInterval: Math.min(1000, headers),
  }
  return { http, tls: { ...http, handshakeTimeout: headers }, bodyTimeoutMs: body }
}

/**
 * Why a server could not listen, in one line that says which address and what to do; `code`
 * stays Node's (`EADDRINUSE`, `EACCES`) for callers that decide by it.
 */
function listenError(cause: unknown, host: string, port: number): Error {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  const at = `${host.includes(':') ? `[${host}]` : host}:${port}`
  const message =
    code === 'EADDRINUSE'
      ? `${at} is already in use: stop the process listening there, or pick another port`
      : code === 'EACCES'
        ? `${at} needs privileges this user lacks: pick a port above 1023`
        : `cannot listen on ${at}: ${(cause as Error)?.message ?? cause}`
  return Object.assign(new Error(message, { cause }), { code })
}

/** Options for {@link serveHttps}. */
export interface ServeHttpsOptions extends SlowClientTimeouts {
  /** Port to listen on; 0 picks a free one (see the result's `port`). @default 0 */
  port?: number
  /** Address to listen on. @default '127.0.0.1' */
  host?: string
  /**
   * Certificate and key, PEM; TLS ≥ 1.2 (PROFILE §6). In development `createDevCertificate()` of
   * `@agentmsg/dev-tls`. Required unless `insecureHttpBehindProxy`.
   */
  tls?: { cert: string | Buffer; key: string | Buffer }
  /**
   * Plain http, only behind a TLS-terminating proxy whose public URL is https (PROFILE §6), listed
   * in the handler's `trustedProxies`. Never expose it directly. @default false
   */
  insecureHttpBehindProxy?: boolean
  /** On `close()`, connections still open after this many ms are cut. @default 10_000 */
  closeTimeoutMs?: number
  /** Errors of the listener (a handler that threw). @default console.error */
  onError?: (error: unknown) => void
}

/** A running server. */
export interface HttpsServer {
  /** Base URL, e.g. `https://127.0.0.1:8443`. */
  url: string
  port: number
  /** The `node:https` (or `node:http`) server, e.g. for `upgrade` listeners. */
  server: Server
  /** Stop taking connections, let requests in flight finish, close (drain) the handler. */
  close(): Promise<void>
}

/**
 * Serve a web-standard handler over HTTPS (TLS ≥ 1.2) with `node:https`, the PROFILE §6
 * slow-client timeouts set. A port it cannot listen on rejects with one line naming it and what
 * to do, with Node's `code` (`EADDRINUSE` for a port in use).
 *
 * @example
 * const { cert, key } = await createDevCertificate()
 * const server = await serveHttps(inbox, { port: 8443, tls: { cert, key } })
 * await server.close()
 */
export async function serveHttps(
  handler: FetchHandler,
  options: ServeHttpsOptions = {},
): Promise<HttpsServer> {
  const insecure = options.insecureHttpBehindProxy === true
  if (!options.tls && !insecure) {
    throw new TypeError(
      'serveHttps needs tls {cert, key}, or insecureHttpBehindProxy: true behind a TLS proxy',
    )
  }
  const timeouts = slowClientServerOptions(options)
  const listener = getRequestListener(handler, {
    scheme: 'https', // behind the proxy the public URL is https too
    bodyTimeoutMs: timeouts.bodyTimeoutMs,
    ...(options.onError ? { onError: options.onError } : {}),
  })
  const server: Server =
    options.tls && !insecure
      ? createHttpsServer({ ...options.tls, minVersion: 'TLSv1.2', ...timeouts.tls }, listener)
      : createHttpServer(timeouts.http, listener)
  const host = options.host ?? '127.0.0.1'
  await once(server.listen(options.port ?? 0, host), 'listening').catch((error: unknown) => {
    throw listenError(error, host, options.port ?? 0)
  })
  const port = (server.address() as AddressInfo).port
  let closing: Promise<void> | undefined
  return {
    url: `${insecure ? 'http' : 'https'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    server,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeIdleConnections()
        const timer = setTimeout(
          () => server.closeAllConnections(),
          options.closeTimeoutMs ?? 10_000,
        )
        timer.unref()
        try {
          await handler.close?.()
          server.closeIdleConnections()
          await closed
        } finally {
          clearTimeout(timer)
        }
      })()
      return closing
    },
  }
}
