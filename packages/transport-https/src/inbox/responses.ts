/**
 * HTTP answers as plain data (status, headers, text body), turned into a `Response` by `fetch`
 * or written straight to a socket by the Node adapter: JSON bodies, the PROFILE §6 error body,
 * and the CORS headers every answer carries. Shared by the inbox and the relay.
 */
import { ERROR_STATUS, type ErrorCode } from '@agentmsg/core'

/** One HTTP answer (inbox or relay), before it becomes a `Response`. */
export interface HttpReply {
  status: number
  /** Lower-case header names. */
  headers: Record<string, string>
  body: string | null
}

/** Headers on every response (PROFILE §6 CORS): any origin, `Retry-After` readable. */
export const CORS_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Retry-After',
}

/** A JSON answer with the CORS headers and any `extra` ones; no body for HEAD. */
export function jsonReply(
  status: number,
  body: unknown,
  extra?: Record<string, string>,
  head = false,
): HttpReply {
  return {
    status,
    headers: { ...CORS_RESPONSE_HEADERS, 'content-type': 'application/json', ...extra },
    body: head ? null : JSON.stringify(body),
  }
}

/** Options for {@link errorReply}. */
export interface ErrorReplyOptions {
  /** Seconds for `Retry-After`; always sent for 429 and 503 (at least 1). */
  retryAfter?: number | undefined
  /** More headers, e.g. `Allow` or `Connection`. */
  headers?: Record<string, string>
}

/**
 * The wire error `{"status":"error","code","message"}` with the status PROFILE §6 maps `code`
 * to. 429 and 503 always carry `Retry-After` in whole seconds (≥ 1), as PROFILE §6 requires.
 */
export function errorReply(
  code: ErrorCode,
  message: string,
  options: ErrorReplyOptions = {},
): HttpReply {
  const status = ERROR_STATUS[code]
  const headers: Record<string, string> = { ...options.headers }
  if (status === 429 || status === 503) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(options.retryAfter ?? 1)))
  }
  return jsonReply(status, { status: 'error', code, message }, headers)
}

/** The success answer: 202 `{"status":"accepted","message_id"}` (SPEC §2.10). */
export function acceptedReply(messageId: string): HttpReply {
  return jsonReply(202, { status: 'accepted', message_id: messageId })
}

/** The web `Response` of an answer. */
export function toResponse(reply: HttpReply): Response {
  return new Response(reply.body, { status: reply.status, headers: reply.headers })
}
