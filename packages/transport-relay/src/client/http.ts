/**
 * HTTP plumbing shared by the relay client: endpoint URLs in the serialised form that request
 * signing needs, relay error bodies turned into {@link AgentMsgError}s, and network failures
 * told apart from the caller's own abort.
 */
import { AgentMsgError, ERROR_STATUS, isAgentMsgError, type ErrorCode } from '@agentmsg/core'

/** The codes a relay status means when its body names none we know (PROFILE §6 table). */
const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_format',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'unavailable',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  500: 'internal_error',
  503: 'unavailable',
}

/** How much of an error body is read: enough for `{status, code, message}`. */
const MAX_ERROR_BODY_CHARS = 16 * 1024

/**
 * A relay endpoint as `fetch` will send it (WHATWG-serialised, which `signRequest` requires):
 * the base URL, the path, and the query parameters that are defined, in order.
 */
export function relayEndpoint(
  relayUrl: string,
  path: string,
  query: Record<string, string | number | undefined> = {},
): string {
  const url = new URL(relayUrl + path)
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(name, String(value))
  }
  return url.href
}

/**
 * `Retry-After` in seconds (PROFILE §6 sends integer seconds; an HTTP-date is accepted too).
 * `undefined` when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined
  const text = value.trim()
  if (/^[0-9]{1,10}$/.test(text)) return Number(text)
  const date = Date.parse(text)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, Math.ceil((date - now) / 1000))
}

/**
 * The relay's error answer as an {@link AgentMsgError}: the body's `code` when it is a PROFILE §6
 * code that goes with the status, else the code the status means (other 5xx → `unavailable`,
 * other 4xx → `invalid_format`), with `Retry-After` as `retryAfter`.
 */
export async function errorFromResponse(res: Response, what: string): Promise<AgentMsgError> {
  let code: ErrorCode | undefined
  let detail = ''
  try {
    const text = (await res.text()).slice(0, MAX_ERROR_BODY_CHARS)
    const body = JSON.parse(text) as { code?: unknown; message?: unknown }
    if (typeof body.code === 'string' && Object.hasOwn(ERROR_STATUS, body.code)) {
      const named = body.code as ErrorCode
      if (ERROR_STATUS[named] === res.status) code = named
    }
    if (typeof body.message === 'string') detail = `: ${body.message}`
  } catch {
    // not a JSON error body (a proxy's HTML page, an empty body): the status decides
  }
  code ??= CODE_BY_STATUS[res.status] ?? (res.status >= 500 ? 'unavailable' : 'invalid_format')
  const retryAfter = parseRetryAfter(res.headers.get('retry-after'))
  return new AgentMsgError(code, `${what}: the relay answered ${res.status} ${code}${detail}`, {
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  })
}

/** True when `error` is (or was caused by) the abort of `signal`. */
export function isAbortOf(error: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && (error === signal.reason || isAbortError(error))
}

function isAbortError(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    ((error as { name?: unknown }).name === 'AbortError' ||
      (error as { name?: unknown }).name === 'TimeoutError')
  )
}

/**
 * `fetch`, with a network failure (connection refused, TLS, timeout, cut-off body) turned into
 * a retryable `unavailable` {@link AgentMsgError} whose `cause` is the original error. The
 * caller's abort is rethrown as is; an `AgentMsgError` from the fetch itself (a refused address
 * under an address policy) too.
 */
export async function relayFetch(
  fetchFn: typeof fetch,
  url: string,
  init: RequestInit,
  what: string,
): Promise<Response> {
  try {
    return await fetchFn(url, init)
  } catch (error) {
    const signal = init.signal ?? undefined
    if (signal?.aborted) throw signal.reason ?? error
    if (isAgentMsgError(error)) throw error
    throw networkError(error, what)
  }
}

/** A network failure as a retryable `unavailable` error. */
export function networkError(error: unknown, what: string): AgentMsgError {
  const reason = error instanceof Error ? error.message : String(error)
  return new AgentMsgError('unavailable', `${what}: network error: ${reason}`, { cause: error })
}

/** Read a JSON body, or fail with `internal_error` naming what was expected. */
export async function readJson(res: Response, what: string): Promise<unknown> {
  const text = await res.text()
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new AgentMsgError(
      'internal_error',
      `${what}: the relay answered ${res.status} with a body that is not JSON`,
      {
        cause: error,
      },
    )
  }
}
