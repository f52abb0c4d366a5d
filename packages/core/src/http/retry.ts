// `Retry-After` as PROFILE §6 reads it, and full-jitter exponential backoff: a random delay over
// the whole window spreads the clients that lost the same peer.
import { positiveInt } from '../errors.js'
import { PROFILE } from '../profile.js'

/** `Retry-After` in ms: delay-seconds or an HTTP-date; else (`"1.5"`, `"-1"`) `undefined`. */
export function parseRetryAfter(
  value: string | null | undefined,
  now = Date.now(),
): number | undefined {
  if (value == null) return undefined
  const v = value.trim()
  if (/^[0-9]+$/.test(v)) return Math.min(Number(v) * 1000, Number.MAX_SAFE_INTEGER)
  // An HTTP-date names a weekday and a time: the loose strings Date.parse takes are refused.
  if (!/^[A-Za-z]{3,9},? .*\d{2}:\d{2}:\d{2}/.test(v)) return undefined
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

export interface BackoffOptions {
  /** @default PROFILE.retryBaseMs */
  baseMs?: number
  /** @default PROFILE.retryCapMs */
  capMs?: number
  /** Uniform in [0, 1). @default Math.random */
  random?: () => number
}

/** The delay before retry `attempt` (≥ 1): uniform in `[0, min(cap, base × 2^(attempt−1)))`. */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  positiveInt(attempt, 'backoffDelay: attempt')
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

  /** The delay before the next attempt, ms. */
  next(): number {
    return backoffDelay(++this.#attempt, this.#options)
  }

  /** It worked: the next failure waits the first window again. */
  reset(): void {
    this.#attempt = 0
  }
}

/** Wait `ms`, or until `signal` aborts (then resolve early). */
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
