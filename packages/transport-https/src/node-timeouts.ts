/**
 * Slow clients on `node:http(s)` servers (PROFILE §6, inbox and relay): request headers must
 * arrive within 10 s and a body within 30 s of its headers, else the connection is closed, so a
 * client that trickles bytes cannot hold a read slot (and the memory behind it) for Node's
 * default 300 s `requestTimeout`.
 *
 * Node checks `headersTimeout` and `requestTimeout` itself (answering 408 and closing), but
 * `requestTimeout` counts from the start of the request, headers included; the body's own 30 s
 * are therefore a timer per request ({@link bodyDeadline}), and `requestTimeout` (headers +
 * body) is only the backstop for handlers that take no such care.
 */
import type { IncomingMessage, ServerOptions, ServerResponse } from 'node:http'
import type { TlsOptions } from 'node:tls'

/** Default time for a request's headers (and for a TLS handshake). */
export const HEADERS_TIMEOUT_MS = 10_000
/** Default time for a request's body, after its headers. */
export const BODY_TIMEOUT_MS = 30_000

/** The slow-client timeouts of a server (PROFILE §6). */
export interface SlowClientTimeouts {
  /**
   * A request's headers must be in this long after it began, and a TLS handshake done in as
   * long, else the connection is closed.
   * @default 10_000
   */
  headersTimeoutMs?: number
  /** A request's body must be in this long after its headers, else the connection is closed. @default 30_000 */
  bodyTimeoutMs?: number
}

/** What {@link slowClientServerOptions} gives: server options and the listener's body deadline. */
export interface SlowClientServerOptions {
  /** For `http.createServer`. */
  http: ServerOptions
  /** For `https.createServer` (the above plus `handshakeTimeout`). */
  tls: ServerOptions & TlsOptions
  /** For `getRequestListener({ bodyTimeoutMs })`. */
  bodyTimeoutMs: number
}

function ms(value: number | undefined, fallback: number, name: string): number {
  const v = value ?? fallback
  if (!(Number.isSafeInteger(v) && v > 0))
    throw new RangeError(`${name} must be a positive integer`)
  return v
}

/**
 * Server options that enforce {@link SlowClientTimeouts}. Node looks at its timeouts every
 * `connectionsCheckingInterval` (30 s by default, which would stretch 10 s to 40): here every
 * second, or as often as the headers timeout if shorter.
 *
 * @example
 * const t = slowClientServerOptions({})
 * const server = https.createServer({ cert, key, ...t.tls }, getRequestListener(handler, { bodyTimeoutMs: t.bodyTimeoutMs }))
 */
export function slowClientServerOptions(options: SlowClientTimeouts): SlowClientServerOptions {
  const headers = ms(options.headersTimeoutMs, HEADERS_TIMEOUT_MS, 'headersTimeoutMs')
  const body = ms(options.bodyTimeoutMs, BODY_TIMEOUT_MS, 'bodyTimeoutMs')
  const http: ServerOptions = {
    headersTimeout: headers,
    requestTimeout: headers + body,
    connectionsCheckingInterval: Math.min(1000, headers),
  }
  return { http, tls: { ...http, handshakeTimeout: headers }, bodyTimeoutMs: body }
}

/**
 * Close the connection of `req` when its body is not all in `timeoutMs` after now (the moment
 * its headers were parsed). Requests without a body, and bodies already in, need no timer.
 */
export function bodyDeadline(req: IncomingMessage, res: ServerResponse, timeoutMs: number): void {
  if (req.complete || !Number.isFinite(timeoutMs)) return
  const h = req.headers
  const length = h['content-length']
  if (h['transfer-encoding'] === undefined && (length === undefined || length === '0')) return
  const timer = setTimeout(() => {
    if (!req.complete) req.socket.destroy()
  }, timeoutMs)
  timer.unref()
  const clear = () => clearTimeout(timer)
  req.once('end', clear)
  res.once('close', clear)
}
