/**
 * The Node fast path of `POST /relay/publish`, the relay's hot endpoint: the request is read
 * from the `IncomingMessage` and the answer written to the `ServerResponse` directly, without
 * the web `Request` (URL, Headers, body `ReadableStream`, `AbortSignal`) and `Response` the
 * generic adapter builds per request. Issue 12's profile of the relay under publish load put
 * those objects right after verification on the main thread.
 *
 * Same steps as `dispatch` (routes.ts) then `Publisher.publish`: per-address rate, read slot,
 * the endpoint; the same answers, written byte for byte as the generic adapter writes a
 * `Response` (header names sorted as `Headers` iterates them, the body as one chunk of a
 * chunked response, `Connection: close` when the body was not all in). Anything that is not
 * exactly `POST <base>/relay/publish` (a query aside) is left to the generic adapter.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type ClientLimits, errorReply, type HttpReply } from '@agentmsg/transport-https/http-kit'
import { bodyDeadline, readNodeBody } from '@agentmsg/transport-https/node'
import type { PublishRequest } from './publish.js'
import type { RequestTrace } from './relay-report.js'

/** What the fast path needs of the relay (handler.ts). */
export interface NodePublishTarget {
  basePath: string
  clients: ClientLimits
  /** The relay's publish endpoint (refuses with 503 while closing); `trace` learns of duplicates. */
  publish(request: PublishRequest, trace?: RequestTrace): Promise<HttpReply>
  /** An error thrown by the endpoint as its answer (the relay's `fetch` does the same). */
  failure(error: unknown): HttpReply
  /** The answer given, for metrics and logs (relay-report.ts). */
  report?(trace: RequestTrace, reply: HttpReply): void
}

/** Where a relay handler offers its {@link NodePublishTarget}. */
export const NODE_PUBLISH: unique symbol = Symbol('agentmsg.relay.node-publish')

/** A header as web `Headers.get` gives it: every copy, joined with `, `. */
function header(req: IncomingMessage, name: string): string | null {
  const values = req.headersDistinct[name]
  return values === undefined ? null : values.join(', ')
}

async function answer(
  target: NodePublishTarget,
  req: IncomingMessage,
  trace: RequestTrace,
): Promise<HttpReply> {
  try {
    const limits = target.clients
    // Per-address limits before a byte of the body is read (routes.ts step 2).
    const bucket = limits.bucket(req.socket.remoteAddress, () => header(req, 'x-forwarded-for'))
    trace.bucket = bucket
    const wait = limits.take(bucket)
    if (wait > 0) {
      trace.scope = 'address'
      return errorReply('rate_limited', `too many requests from this address; retry in ${wait} s`, {
        retryAfter: wait,
      })
    }
    const start = limits.startRead(bucket)
    if (typeof start !== 'function') {
      trace.scope = 'reads'
      return start
    }
    let released = false
    const release = () => {
      if (released) return
      released = true
      start()
    }
    try {
      return await target.publish(
        {
          header: (name) => header(req, name),
          readBody: (limit) => readNodeBody(req, limit).finally(release),
          discardBody: release,
        },
        trace,
      )
    } finally {
      release()
    }
  } catch (error) {
    return target.failure(error)
  }
}

/** Write `reply` as the generic adapter writes `toResponse(reply)` (node-server.ts). */
function writeReply(req: IncomingMessage, res: ServerResponse, reply: HttpReply): void {
  const headers: Record<string, string> = {}
  for (const name of Object.keys(reply.headers).sort()) headers[name] = reply.headers[name]!
  if (!req.complete) headers.connection = 'close'
  res.writeHead(reply.status, headers)
  if (reply.body !== null && reply.body !== '') res.write(reply.body)
  res.end()
}

/**
 * A `request` listener step: handles `POST <base>/relay/publish` and returns true, or returns
 * false for the generic adapter to take the request.
 */
export function nodePublishRoute(
  target: NodePublishTarget,
  options: { bodyTimeoutMs: number; onError: (error: unknown) => void },
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const path = `${target.basePath}/relay/publish`
  return (req, res) => {
    if (req.method !== 'POST') return false
    const url = req.url ?? ''
    const q = url.indexOf('?')
    if ((q < 0 ? url : url.slice(0, q)) !== path) return false
    if (req.socket.destroyed) return true
    bodyDeadline(req, res, options.bodyTimeoutMs)
    const trace: RequestTrace = { route: 'publish' }
    void answer(target, req, trace).then((reply) => {
      try {
        writeReply(req, res, reply)
      } catch (error) {
        options.onError(error)
        res.destroy()
      }
      target.report?.(trace, reply)
    })
    return true
  }
}
