/**
 * Building the inbox's responses: JSON bodies, the PROFILE §6 error body, and the CORS header
 * every response carries.
 */
import { ERROR_STATUS, type ErrorCode } from '@agentmsg/core'

/** Headers on every inbox response (PROFILE §6 CORS): any origin, `Retry-After` readable. */
export const CORS_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Retry-After',
}

/** A JSON response with the CORS headers and any `extra` ones. */
export function jsonResponse(
  status: number,
  body: unknown,
  extra?: Record<string, string>,
  head = false,
): Response {
  const headers: Record<string, string> = {
    ...CORS_RESPONSE_HEADERS,
    'content-type': 'application/json',
    ...extra,
  }
  return new Response(head ? null : JSON.stringify(body), { status, headers })
}

/** Options for {@link errorResponse}. */
export interface ErrorResponseOptions {
  /** Seconds for `Retry-After`; always sent for 429 and 503 (at least 1). */
  retryAfter?: number | undefined
  /** More headers, e.g. `Allow` or `Connection`. */
  headers?: Record<string, string>
}

/**
 * The wire error `{"status":"error","code","message"}` with the status PROFILE §6 maps `code`
 * to. 429 and 503 always carry `Retry-After` in whole seconds (≥ 1), as PROFILE §6 requires.
 */
export function errorResponse(
  code: ErrorCode,
  message: string,
  options: ErrorResponseOptions = {},
): Response {
  const status = ERROR_STATUS[code]
  const headers: Record<string, string> = { ...options.headers }
  if (status === 429 || status === 503) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(options.retryAfter ?? 1)))
  }
  return jsonResponse(status, { status: 'error', code, message }, headers)
}

/** The success answer: 202 `{"status":"accepted","message_id"}` (SPEC §2.10). */
export function acceptedResponse(messageId: string): Response {
  return jsonResponse(202, { status: 'accepted', message_id: messageId })
}
