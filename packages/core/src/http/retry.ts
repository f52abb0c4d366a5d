/**
 * When to try again: `Retry-After` as PROFILE §6 reads it, and full-jitter exponential backoff
 * ("Exponential Backoff And Jitter", AWS Architecture Blog): a random delay over the whole
 * window spreads the clients that lost the same peer, so it is not hit by all of them at once.
 */
import { PROFILE } from '../profile.js'

/**
 * `Retry-After` in milliseconds from `now`: delay-seconds (`"7"`) or an HTTP-date (RFC 9110
 * §10.2.3); a date in the past gives 0. Anything else (`"1.5"`, `"-1"`, `"12 13"`) or no
 * header gives `undefined`: no permission to retry was given.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now = Date.now(),
): number | undefined {
  if (value == null) return undefined
  const v = value.trim()
  if (/^[0-9]+$/.test(v)) return Math.min(Number(v) * 1000, Number.MAX_SAFE_INTEGER)
  // An HTTP-date names a weekday and a time: this refuses the loose strings Date.parse takes.
  if (!/^[A-Za-z]{3,9},? .*\d{2}:\d{2}:\d{2}/.test(v)) return undefined
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** Options of {@link backoffDelay} and {@link Backoff}. */
export interface BackoffOptions {
  /** The first window. @default PROFILE.retryBaseMs (1 s) */
  baseMs?: number
  /** The largest window. @default PROFILE.retryCapMs (1 h) */
  capMs?: number
  /** Uniform numbers in [0, 1), for tests. @default Math.random */
  random?: () => number
}

/**
 * The delay before retry number `attempt` (1 = the first retry): uniform in
 * `[0, min(cap, base × 2^(attempt−1)))`, whole milliseconds.
 *
 * @example
 * backoffDelay(1) // 0–999 ms
 * backoffDelay(13) // 0–3_599_999 ms (the 1 h cap)
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`backoffDelay: attempt must be an integer >= 1, got ${attempt}`)
  }
  const { baseMs = PROFILE.retryBaseMs, capMs = PROFILE.retryCapMs, random = Math.random } = options
  // 2 ** large is Infinity, which min() turns into the cap.
  const ceiling = Math.min(capMs, baseMs * 2 ** (attempt - 1))
  const r = random()
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0
  // Exclusive bound, also for a random() that returns exactly 1.
  return Math.max(0, Math.min(Math.floor(unit * ceiling), ceiling - 1))
}

/** Successive {@link backoffDelay}s that start over after a success. */
export class Backoff {
  readonly #options: BackoffOptions
  #attempt = 0

  constructor(options: BackoffOptions = {}) {
    this.#options = options
  }

  /** The delay before the next retry; each call widens the window. */
  next(): number {
    return backoffDelay(++this.#attempt, this.#options)
  }

  /** It worked: the next failure waits the first window again. */
  reset(): void {
    this.#attempt = 0
  }
}

/** Wait `ms`, or until `signal` aborts (then resolve early: callers check their own state). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
