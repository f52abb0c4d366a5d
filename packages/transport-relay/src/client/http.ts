/**
 * HTTP plumbing shared by the relay client: endpoint URLs in the serialised form that request
 * signing needs, relay error bodies turned into {@link AgentMsgError}s, and network failures
 * told apart from the caller's own abort.
 */
import { AgentMsgError, type ErrorCode, isAgentMsgError } from '@agentmsg/core'
import { ERROR_STATUS } from '@agentmsg/core/http'

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

/** Byte caps on what a relay sends (PROFILE §4): an error or acknowledgement reply, a document. */
export const MAX_REPLY_BYTES = 64 * 1024
/** A retrieve page: 8 MiB of messages (PROFILE §9) plus room for the envelope. */
export const MAX_PAGE_RESPONSE_BYTES = 8 * 1024 * 1024 + 64 * 1024
/** One SSE event or WebSocket frame: a 1 MiB message plus its trace and envelope. */
export const MAX_EVENT_BYTES = 1024 * 1024 + 64 * 1024
/** Requests other than streams: answered and read within this (PROFILE §4). */
export const DEFAULT_TIMEOUT_MS = 30_000

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
 * other 4xx → `invalid_format`), with `Retry-After` as `retryAfter`. At most
 * {@link MAX_REPLY_BYTES} of the body are read; a longer one is dropped and the status decides.
 */
export async function errorFromResponse(
  res: Response,
  what: string,
  signal?: AbortSignal,
): Promise<AgentMsgError> {
  let code: ErrorCode | undefined
  let detail = ''
  try {
    const text = new TextDecoder().decode(await readCapped(res, MAX_REPLY_BYTES, what, signal))
    const body = JSON.parse(text) as { code?: unknown; message?: unknown }
    if (typeof body.code === 'string' && Object.hasOwn(ERROR_STATUS, body.code)) {
      const named = body.code as ErrorCode
      if (ERROR_STATUS[named] === res.status) code = named
    }
    if (typeof body.message === 'string') detail = `: ${body.message.slice(0, 1024)}`
  } catch {
    // not a JSON error body (a proxy's HTML page, an empty or oversized body): the status decides
  }
  code ??= CODE_BY_STATUS[res.status] ?? (res.status >= 500 ? 'unavailable' : 'invalid_format')
  const retryAfter = parseRetryAfter(res.headers.get('retry-after'))
  return new AgentMsgError(code, `${what}: the relay answered ${res.status} ${code}${detail}`, {
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  })
}

/** The relay sent more than the cap: a retryable `unavailable`, like a cut-off body. */
export function tooLargeError(what: string, maxBytes: number): AgentMsgError {
  return new AgentMsgError('unavailable', `${what}: the relay's answer is over ${maxBytes} bytes`)
}

/**
 * Read a body, at most `maxBytes` of it (PROFILE §4): a `Content-Length` above the cap is
 * refused before reading, and a body that grows past it is cancelled at once (the connection
 * is dropped), so an endless body is never buffered whole. An abort of `signal` cancels it too.
 *
 * @throws AgentMsgError `unavailable` when over the cap; the signal's reason when aborted.
 */
export async function readCapped(
  res: Response,
  maxBytes: number,
  what: string,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  const body = res.body
  if (body === null) return new Uint8Array(0)
  const declared = Number(res.headers.get('content-length') ?? Number.NaN)
  if (declared > maxBytes) {
    await body.cancel().catch(() => {})
    throw tooLargeError(what, maxBytes)
  }
  const reader = body.getReader()
  const onAbort = () => void reader.cancel(signal?.reason).catch(() => {})
  signal?.addEventListener('abort', onAbort, { once: true })
  const chunks: Uint8Array[] = []
  let length = 0
  let complete = false
  try {
    for (;;) {
      signal?.throwIfAborted()
      const { done, value } = await reader.read()
      signal?.throwIfAborted()
      if (done) break
      length += value.byteLength
      if (length > maxBytes) throw tooLargeError(what, maxBytes)
      chunks.push(value)
    }
    complete = true
  } finally {
    signal?.removeEventListener('abort', onAbort)
    if (!complete) reader.cancel().catch(() => {})
  }
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(length)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

/**
 * A signal for one request: aborted by the caller's `signal`, or after `timeoutMs` with an
 * `unavailable` error naming the timeout. `0` or `Infinity`: no timeout. Call `clear()` when done.
 */
export function deadline(
  timeoutMs: number,
  what: string,
  signal?: AbortSignal,
): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController()
  const onAbort = () => controller.abort(signal?.reason)
  if (signal?.aborted) controller.abort(signal.reason)
  else signal?.addEventListener('abort', onAbort, { once: true })
  const timer =
    timeoutMs > 0 && timeoutMs < 2_147_483_647
      ? setTimeout(
          () =>
            controller.abort(
              new AgentMsgError('unavailable', `${what}: no answer within ${timeoutMs} ms`),
            ),
          timeoutMs,
        )
      : undefined
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    },
  }
}

/** One request of {@link exchange}. */
export interface Exchange<T> {
  fetch: typeof fetch
  url: string
  init: Omit<RequestInit, 'signal'>
  what: string
  timeoutMs: number
  signal?: AbortSignal | undefined
  /** Reads a 2xx answer (under the same deadline). */
  read: (res: Response, signal: AbortSignal) => Promise<T>
}

/**
 * A request answered and read within its deadline: a 2xx answer goes to `read`, any other
 * becomes the relay's error (body capped). The deadline's own error wins over whatever the
 * `fetch` made of the abort; the caller's abort rejects with its reason.
 */
export async function exchange<T>(x: Exchange<T>): Promise<T> {
  const d = deadline(x.timeoutMs, x.what, x.signal)
  try {
    const res = await relayFetch(x.fetch, x.url, { ...x.init, signal: d.signal }, x.what)
    if (res.status < 200 || res.status > 299) throw await errorFromResponse(res, x.what, d.signal)
    return await x.read(res, d.signal)
  } catch (error) {
    if (d.signal.aborted) throw x.signal?.aborted ? (x.signal.reason ?? error) : d.signal.reason
    throw error
  } finally {
    d.clear()
  }
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

/** Read a JSON reply (at most {@link MAX_REPLY_BYTES}), or fail with `internal_error`. */
export async function readJson(
  res: Response,
  what: string,
  signal?: AbortSignal,
): Promise<unknown> {
  const text = new TextDecoder().decode(await readCapped(res, MAX_REPLY_BYTES, what, signal))
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new AgentMsgError(
      'internal_error',
      `${what}: the relay answered ${res.status} with a body that is not JSON`,
      { cause: error },
    )
  }
}
