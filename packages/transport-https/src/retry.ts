/**
 * The retry policy of PROFILE §6 as pure functions, kept apart from the sender so every rule is
 * unit-testable without a network or a clock:
 *
 * - 2xx → delivered. 202 is the answer SPEC §4.1 prescribes; any other 2xx still says the peer
 *   took the message, and sending it again could only duplicate it.
 * - 5xx, network errors, attempt timeouts → retried with full-jitter exponential backoff
 *   (1 s base, ×2, capped at 1 h) until 24 h after the first attempt.
 * - 429 and 503 with a valid `Retry-After` → retried no sooner than it says (PROFILE's
 *   deliberate deviation from SPEC §7.3.3). A 503 without one is an ordinary 5xx; a 429
 *   without one is an ordinary 4xx: no permission to retry was given.
 * - Every other status (other 4xx, 3xx — redirects are not followed — and anything odd) →
 *   failed, never retried (SPEC §7.3.3).
 */
import { isAgentMsgError } from '@agentmsg/core'

/** First backoff ceiling: 1 s. */
export const RETRY_BASE_MS = 1_000
/** Largest backoff ceiling: 1 h. */
export const RETRY_CAP_MS = 3_600_000
/** Retries stop this long after the first attempt: 24 h. */
export const DEFAULT_DEADLINE_MS = 86_400_000
/** Timeout of one attempt: 30 s. */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 30_000

/** What to do after one attempt. */
export type AttemptOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'retry'; reason: string; status?: number }
  | { kind: 'retry-after'; retryAfterMs: number; reason: string; status: number }
  | { kind: 'fail'; reason: string; status?: number }

/** The outcomes that lead to another attempt. */
export type RetryOutcome = Extract<AttemptOutcome, { kind: 'retry' | 'retry-after' }>

/** Anything with a `Headers`-like `get`. */
export interface HeaderReader {
  get(name: string): string | null
}

/**
 * The full-jitter backoff before retry number `attempt` (1 = the retry after the first failed
 * attempt): a uniformly random delay in [0, min(1 h, 1 s × 2^(attempt−1))), whole milliseconds.
 *
 * @param random returns a number in [0, 1), as `Math.random` does.
 * @example
 * retryDelay(1) // 0–999 ms
 * retryDelay(13) // 0–3_599_999 ms (the 1 h cap)
 */
export function retryDelay(attempt: number, random: () => number = Math.random): number {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`retryDelay: attempt must be an integer >= 1, got ${attempt}`)
  }
  // 2 ** large is Infinity, which min() turns into the cap.
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (attempt - 1))
  const r = random()
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0
  // Keep the bound exclusive even if a custom random() returns exactly 1.
  return Math.min(Math.floor(unit * ceiling), ceiling - 1)
}

/**
 * `Retry-After` in milliseconds from `now`: delay-seconds (`"7"`) or an HTTP-date (RFC 9110
 * §10.2.3). A date in the past gives 0. Anything else, or no header, gives `undefined`.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value == null) return undefined
  const v = value.trim()
  if (/^[0-9]+$/.test(v)) {
    const seconds = Number(v)
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : Number.MAX_SAFE_INTEGER
  }
  // An HTTP-date always names a weekday and a time: this rejects bare numbers with signs or
  // fractions, and loose strings Date.parse would otherwise accept.
  if (!/^[A-Za-z]{3,9},? .*\d{2}:\d{2}:\d{2}/.test(v)) return undefined
  const at = Date.parse(v)
  if (Number.isNaN(at)) return undefined
  return Math.max(0, at - now)
}

/**
 * Classify the status of an answer to one inbox POST.
 *
 * @param now the current time, for a `Retry-After` given as an HTTP-date.
 * @example
 * classifyResponse(202, new Headers()) // { kind: 'delivered', status: 202 }
 * classifyResponse(429, new Headers({ 'Retry-After': '7' }), now) // retry-after, 7000 ms
 */
export function classifyResponse(
  status: number,
  headers: HeaderReader,
  now: number = Date.now(),
): AttemptOutcome {
  if (status >= 200 && status <= 299) return { kind: 'delivered', status }
  if (status === 429 || status === 503) {
    const header = headers.get('retry-after')
    const retryAfterMs = parseRetryAfter(header, now)
    if (retryAfterMs !== undefined) {
      return {
        kind: 'retry-after',
        retryAfterMs,
        reason: `status ${status} with Retry-After: ${header?.trim()}`,
        status,
      }
    }
  }
  if (status >= 500 && status <= 599) return { kind: 'retry', reason: `status ${status}`, status }
  if (status === 429) {
    return { kind: 'fail', reason: 'status 429 without a valid Retry-After', status }
  }
  if (status >= 300 && status <= 399) {
    return {
      kind: 'fail',
      reason: `status ${status}: inbox deliveries do not follow redirects`,
      status,
    }
  }
  return { kind: 'fail', reason: `status ${status}`, status }
}

/**
 * Classify an attempt that produced no answer. Timeouts and network errors (refused or reset
 * connections, DNS, TLS) are retried: they may pass. An {@link AgentMsgError} that says it
 * will not pass (e.g. a refused address from the fetch's address policy) fails at once.
 */
export function classifyError(error: unknown): AttemptOutcome {
  if (isAgentMsgError(error) && !error.shouldRetry()) {
    return { kind: 'fail', reason: `${error.code}: ${error.message}` }
  }
  if (error instanceof Error && error.name === 'TimeoutError') {
    return { kind: 'retry', reason: `timeout: ${error.message}` }
  }
  return { kind: 'retry', reason: `network error: ${describeError(error)}` }
}

/** Where delivery stands, as far as scheduling cares. */
export interface ScheduleState {
  /** Attempts made so far, including the one that just failed (>= 1). */
  attempts: number
  /** When the first attempt started (ms since the epoch). */
  firstAttempt: number
  /** The current time. */
  now: number
}

/** Options of {@link nextAttemptAt}. */
export interface ScheduleOptions {
  /** @default DEFAULT_DEADLINE_MS (24 h) */
  deadlineMs?: number
  /** @default Math.random */
  random?: () => number
}

/** The next attempt, or why there is none. */
export type NextAttempt =
  | { retry: true; at: number; delayMs: number }
  | { retry: false; reason: string }

/**
 * When to try again after a retryable outcome. The deadline is `firstAttempt + deadlineMs`.
 *
 * - A backoff that would end past the deadline is shortened to it: one last attempt happens
 *   at the deadline. At or past the deadline there is none.
 * - `Retry-After` is never shortened: when the earliest permitted time is past the deadline,
 *   there is no further attempt. The delay is the larger of `Retry-After` and the backoff, so
 *   a peer answering `Retry-After: 0` again and again still sees the backoff grow.
 */
export function nextAttemptAt(
  outcome: RetryOutcome,
  state: ScheduleState,
  options: ScheduleOptions = {},
): NextAttempt {
  const deadline = state.firstAttempt + (options.deadlineMs ?? DEFAULT_DEADLINE_MS)
  const { now } = state
  const tries = `${state.attempts} attempt${state.attempts === 1 ? '' : 's'}`
  if (now >= deadline) {
    return {
      retry: false,
      reason: `no 202 within the delivery deadline after ${tries}; last: ${outcome.reason}`,
    }
  }
  const backoff = retryDelay(state.attempts, options.random)
  if (outcome.kind === 'retry-after') {
    const earliest = now + outcome.retryAfterMs
    if (earliest > deadline) {
      return {
        retry: false,
        reason: `${outcome.reason} asks to wait past the delivery deadline (after ${tries})`,
      }
    }
    const at = Math.min(Math.max(earliest, now + backoff), deadline)
    return { retry: true, at, delayMs: at - now }
  }
  const at = Math.min(now + backoff, deadline)
  return { retry: true, at, delayMs: at - now }
}

/** A one-line description of an error and its causes, e.g. `fetch failed (ECONNREFUSED)`. */
export function describeError(error: unknown): string {
  const parts: string[] = []
  let e: unknown = error
  for (let depth = 0; e != null && depth < 4; depth++) {
    if (e instanceof Error || (typeof e === 'object' && 'message' in e)) {
      const { message, code } = e as { message?: unknown; code?: unknown }
      const text = [
        typeof message === 'string' ? message : '',
        typeof code === 'string' ? code : '',
      ]
        .filter((s) => s && !parts.some((p) => p.includes(s)))
        .join(' ')
      if (text) parts.push(text)
      e = (e as { cause?: unknown }).cause
    } else {
      parts.push(String(e))
      break
    }
  }
  return parts.length === 0 ? 'unknown error' : parts.join(': ')
}
