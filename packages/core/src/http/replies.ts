/**
 * HTTP answers as plain data until they become a `Response` (JSON bodies, the PROFILE §6 error
 * body, the CORS headers of every answer), and the inbox's Content-Type rule.
 */
import { ERROR_STATUS, type ErrorCode } from '../errors.js'

/** One HTTP answer (inbox or relay) before it becomes a `Response`; lower-case header names. */
export type HttpReply = {
  /** The HTTP status. */
  status: number
  /** Lower-case names. */
  headers: Record<string, string>
  /** The body text, or none. */
  body: string | null
}

/** Headers on every response (PROFILE §6 CORS): any origin, `Retry-After` readable. */
export const CORS_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Retry-After',
}

/** A JSON answer with the CORS headers and any `extra` ones; no body for HEAD. */
export const jsonReply = (
  status: number,
  body: unknown,
  extra?: Record<string, string>,
  head = false,
): HttpReply => ({
  status,
  headers: { ...CORS_RESPONSE_HEADERS, 'content-type': 'application/json', ...extra },
  body: head ? null : JSON.stringify(body),
})

/**
 * The wire error `{"status":"error","code","message"}` with the status PROFILE §6 maps `code`
 * to. 429 and 503 always carry `Retry-After` in whole seconds (≥ 1), as PROFILE §6 requires;
 * `headers` adds others (`Allow`, `Connection`).
 */
export function errorReply(
  code: ErrorCode,
  message: string,
  options: { retryAfter?: number | undefined; headers?: Record<string, string> } = {},
): HttpReply {
  const status = ERROR_STATUS[code]
  const headers = { ...options.headers }
  if (status === 429 || status === 503) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(options.retryAfter ?? 1)))
  }
  return jsonReply(status, { status: 'error', code, message }, headers)
}

/** The success answer: 202 `{"status":"accepted","message_id"}` (SPEC §2.10). */
export const acceptedReply = (messageId: string): HttpReply =>
  jsonReply(202, { status: 'accepted', message_id: messageId })

/** The web `Response` of an answer. */
export const toResponse = (reply: HttpReply): Response =>
  new Response(reply.body, { status: reply.status, headers: reply.headers })

/** The request headers a browser may send, exactly as PROFILE §6 lists them. */
export const CORS_ALLOW_HEADERS =
  'Content-Type, Accept, Idempotency-Key, Signature, Signature-Input, Content-Digest, Last-Event-ID'

/**
 * 204 answer to an `OPTIONS` preflight: any origin, the path's methods, PROFILE §6's header
 * list, `Retry-After` exposed, no credentials (no `Access-Control-Allow-Credentials`).
 *
 * @param methods the path's methods, e.g. `POST, OPTIONS`
 */
export const preflightReply = (methods: string): HttpReply => ({
  status: 204,
  body: null,
  headers: {
    ...CORS_RESPONSE_HEADERS,
    'access-control-allow-methods': methods,
    'access-control-allow-headers': CORS_ALLOW_HEADERS,
    // Browsers cap this (Chromium at 2 h); a day is the common ask.
    'access-control-max-age': '86400',
    allow: methods,
  },
})
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
// qdtext: HTAB, SP, 0x21, 0x23–0x5B, 0x5D–0x7E (obs-text is not needed for "utf-8").
const QUOTED = '"((?:[\\t !#-\\[\\]-~]|\\\\[\\t -~])*)"'
const JSON_TYPE = new RegExp(
  `^[ \\t]*application/json[ \\t]*(?:;[ \\t]*charset=(?:(${TOKEN})|${QUOTED})[ \\t]*)?$`,
  'i',
)

/**
 * Whether a Content-Type (or `null`: none) is PROFILE §6's: `application/json`, optionally with
 * `charset=utf-8`, case-insensitive, spaces or tabs around `;`, the charset maybe a quoted
 * string (RFC 9110 §5.6.4).
 * @example
 * isJsonContentType('Application/JSON ; Charset="UTF-8"') // true
 * isJsonContentType('application/json; charset=latin1')  // false
 */
export function isJsonContentType(value: string | null | undefined): boolean {
  const m = value ? JSON_TYPE.exec(value) : null
  const charset = m?.[1] ?? m?.[2]?.replace(/\\(.)/g, '$1')
  return m !== null && (charset === undefined || charset.toLowerCase() === 'utf-8')
}
