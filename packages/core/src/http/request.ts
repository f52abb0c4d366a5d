// One outbound request to a peer, with a deadline and capped reads. Where requests may go
// (PROFILE §4) is the `fetch`'s business (`createNodeFetch({ addressPolicy })`).
import {
  AgentMsgError,
  codeForStatus,
  ERROR_STATUS,
  type ErrorCode,
  isAgentMsgError,
} from '../errors.js'
import { PROFILE } from '../profile.js'
import { withTraceContext } from '../telemetry.js'
import { readBody } from './body.js'
import { parseRetryAfter } from './retry.js'

export interface HttpRequestOptions extends Omit<RequestInit, 'signal'> {
  fetch?: typeof fetch | undefined
  /** Over the request and the read, together; 0: none. @default PROFILE.requestTimeoutMs */
  timeoutMs?: number | undefined
  signal?: AbortSignal | undefined
  /** In error messages: `publish to https://relay.example`. */
  what?: string | undefined
}

export type ReadAnswer<T> = (response: Response, signal: AbortSignal) => Promise<T>

/** Send a request and read its 2xx answer with `read`; else the peer's error or `unavailable`. */
export async function httpRequest<T>(
  url: string,
  options: HttpRequestOptions,
  read: ReadAnswer<T>,
): Promise<T> {
  const {
    fetch = globalThis.fetch,
    timeoutMs = PROFILE.requestTimeoutMs,
    signal,
    ...rest
  } = options
  const { what: named, ...init } = rest
  const what = named ?? `${init.method ?? 'GET'} ${url}`
  const d = deadline(timeoutMs, what, signal)
  try {
    let response: Response
    try {
      const headers = withTraceContext(init.headers)
      response = await fetch(url, { redirect: 'manual', ...init, headers, signal: d.signal })
    } catch (error) {
      if (d.signal.aborted || isAgentMsgError(error)) throw error
      throw networkError(error, what)
    }
    if (response.status < 200 || response.status > 299) {
      throw await errorFromResponse(response, what, d.signal)
    }
    return await read(response, d.signal)
  } catch (error) {
    if (d.signal.aborted) throw signal?.aborted ? (signal.reason ?? error) : d.signal.reason
    throw error
  } finally {
    d.clear()
  }
}

/** A peer's non-2xx answer as an {@link AgentMsgError} (`peerStatus`, `peerCode`, `retryAfter`). */
export async function errorFromResponse(
  response: Response,
  what: string,
  signal?: AbortSignal,
): Promise<AgentMsgError> {
  const status = response.type === 'opaqueredirect' ? 302 : response.status
  let peerCode: string | undefined
  let detail = ''
  try {
    const bytes = await readBody(response, { maxBytes: PROFILE.replyMaxBytes, signal })
    const body = bytes && (JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>)
    if (typeof body?.code === 'string') peerCode = body.code.slice(0, 200)
    if (typeof body?.message === 'string') detail = `: ${body.message.slice(0, 1000)}`
  } catch {
    // Not a JSON error body (a proxy's page, an empty or oversized one): the status decides.
    signal?.throwIfAborted()
  }
  const named = peerCode !== undefined && Object.hasOwn(ERROR_STATUS, peerCode)
  const code: ErrorCode =
    named && ERROR_STATUS[peerCode as ErrorCode] === status
      ? (peerCode as ErrorCode)
      : codeForStatus(status)
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'))
  const text = `${what}: ${status} ${peerCode ?? code}${detail}`
  return new AgentMsgError(code, text, {
    peerStatus: status,
    peerCode,
    retryAfter: retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
  })
}

export function networkError(error: unknown, what: string): AgentMsgError {
  return new AgentMsgError('unavailable', `${what}: network error: ${describeError(error)}`, {
    cause: error,
  })
}

/** Read a JSON answer of at most `maxBytes`; else `unavailable`. */
export async function readJson(
  response: Response,
  signal: AbortSignal,
  maxBytes: number = PROFILE.replyMaxBytes,
): Promise<unknown> {
  const bytes = await readBody(response, { maxBytes, signal })
  if (bytes === undefined) {
    throw new AgentMsgError('unavailable', `${response.url}: the answer is over ${maxBytes} bytes`)
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes))
  } catch (error) {
    throw new AgentMsgError('unavailable', `${response.url}: the answer is not JSON`, {
      cause: error,
    })
  }
}

/** A signal for one request: the caller's, or `timeoutMs` passing (`unavailable`); 0: none. */
export function deadline(
  timeoutMs: number,
  what: string,
  signal?: AbortSignal,
): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController()
  const onAbort = () => controller.abort(signal?.reason)
  if (signal?.aborted) controller.abort(signal.reason)
  else signal?.addEventListener('abort', onAbort, { once: true })
  const late = () => new AgentMsgError('unavailable', `${what}: no answer within ${timeoutMs} ms`)
  const timer =
    timeoutMs > 0 && timeoutMs < 2 ** 31
      ? setTimeout(() => controller.abort(late()), timeoutMs)
      : undefined
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    },
  }
}

/** An error and its causes on one line. */
export function describeError(error: unknown): string {
  const parts: string[] = []
  for (let e = error, depth = 0; e != null && depth < 4; depth++) {
    if (typeof e !== 'object' || !('message' in e)) {
      parts.push(String(e))
      break
    }
    const { message, code, cause } = e as { message?: unknown; code?: unknown; cause?: unknown }
    const text = [message, code]
      .filter(
        (s): s is string => typeof s === 'string' && s !== '' && !parts.some((p) => p.includes(s)),
      )
      .join(' ')
    if (text) parts.push(text)
    e = cause
  }
  return parts.length === 0 ? 'unknown error' : parts.join(': ')
}
