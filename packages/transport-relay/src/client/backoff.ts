/**
 * Reconnect delays for relay streams: full-jitter exponential backoff (AWS Architecture Blog,
 * "Exponential Backoff And Jitter"). Full jitter spreads many clients that lost the same relay
 * over the whole window, so a restarted relay is not hit by all of them at once.
 */

/** Options for {@link reconnectDelay}. */
export interface BackoffOptions {
  /** The first window, in ms. @default 500 */
  baseMs?: number
  /** The largest window, in ms. @default 30_000 */
  capMs?: number
  /** A source of uniform numbers in [0, 1), for tests. @default Math.random */
  random?: () => number
}

/** Default first backoff window (ms). */
export const DEFAULT_BACKOFF_BASE_MS = 500
/** Default largest backoff window (ms). */
export const DEFAULT_BACKOFF_CAP_MS = 30_000

/**
 * The delay before reconnect attempt `attempt` (0 for the first retry): a uniform random value
 * in `[0, min(cap, base · 2^attempt))`.
 *
 * @example
 * reconnectDelay(3) // somewhere in [0, 4000) ms
 */
export function reconnectDelay(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS
  const cap = options.capMs ?? DEFAULT_BACKOFF_CAP_MS
  const random = options.random ?? Math.random
  // 2^attempt overflows to Infinity long after it passed the cap; min() keeps it finite.
  const window = Math.min(cap, base * 2 ** Math.max(0, attempt))
  return Math.floor(random() * window)
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
