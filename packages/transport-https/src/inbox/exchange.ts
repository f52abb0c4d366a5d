/**
 * A request as the inbox pipeline sees it, whatever carried it: a web `Request` (`fetch`), or a
 * Node `IncomingMessage` read directly by the Node adapter, which skips building a `Request`
 * and a `Response` per message (their streams cost about as much as the rest of the pipeline
 * without the signature check).
 */
import { discardBody, readLimited } from './body.js'
import type { HttpReply } from './responses.js'
import type { InboxRequestInfo } from './types.js'

/** One request to the inbox. */
export interface InboxExchange {
  method: string
  /** The URL path, still percent-encoded, without the query. */
  path: string
  /** A header by lower-case name, or `null`. Repeated headers are joined with `, `. */
  header(name: string): string | null
  /** The peer address, for the per-address limit. */
  clientAddress: string | undefined
  /**
   * The whole body, or `undefined` as soon as more than `limit` bytes arrived (the rest is then
   * never read). Rejects with `invalid_format` when the body cannot be read (client gone).
   */
  readBody(limit: number): Promise<Uint8Array | undefined>
  /** The body will not be read. */
  discardBody(): void
}

/** Where a handler made by `createInboxHandler` takes an {@link InboxExchange} directly. */
export const HANDLE_EXCHANGE: unique symbol = Symbol.for('agentmsg.inbox.exchange')

/** Something that answers exchanges: the inbox handler's adapter-facing side. */
export interface ExchangeHandler {
  [HANDLE_EXCHANGE](exchange: InboxExchange): Promise<HttpReply>
}

/**
 * The exchange of a web `Request`. `bodyTimeoutMs`: the body must be in this long after the
 * request reached the handler (PROFILE §6); the Node adapter enforces it on the socket instead.
 */
export function webExchange(
  request: Request,
  info: InboxRequestInfo | undefined,
  bodyTimeoutMs?: number,
): InboxExchange {
  const deadline = bodyTimeoutMs === undefined ? {} : { timeoutMs: bodyTimeoutMs }
  return {
    method: request.method,
    path: new URL(request.url).pathname,
    header: (name) => request.headers.get(name),
    clientAddress: info?.clientAddress,
    readBody: (limit) => readLimited(request.body, limit, deadline),
    discardBody: () => discardBody(request.body),
  }
}
