/**
 * The `auto` choice of the Node provider (see `CryptoMode`): run an Ed25519 operation inline on
 * the event loop, or hand it to libuv's thread pool. Measured with bench/sign-verify.mjs on a
 * shared 2-core machine (ratios to raw node:crypto in the same run, medians):
 *
 * - One at a time, inline wins: the hand-off to the pool and back costs about as much as a
 *   signature. Pooled, signMessage ran at 0.39× of a raw sync sign and verifyMessage at 0.61–0.71×
 *   of a raw sync verify; inline, 0.69–0.72× and 0.83–0.85× (the rest is the SDK's own
 *   JavaScript: validation, canonical form, encoding, ~8–10 µs).
 * - Several in flight, the pool wins, and all of it: 32 in flight, verifyMessage ran at 0.86× of
 *   raw callback verifies pooled, 0.50× when the event loop also verified whenever 2 were in
 *   the pool, 0.61× with at most 3 in the pool (signMessage: 0.61×, 0.47×, 0.48×).
 *
 * So, in this order:
 * 0. Other signMessage / verifyMessage calls are in flight (`crypto/in-flight.ts`) → pool.
 * 1. The caller chains operations: this call starts within CHAINED_MS of the end of our last
 *    one, so nothing but the caller's own code ran in between → inline.
 * 2. Otherwise ask the event loop. "Alone" cannot see a server's load: its requests arrive one
 *    macrotask at a time, and an inline verification ends before the next request is read, so
 *    "alone" fulfils itself (tried: the inbox bench fell to 0.61× of its baseline, against 0.9×
 *    pooled). What a loaded server does show is an event loop busy with work that is not ours:
 *    `performance.eventLoopUtilization()` over the last window, minus the time spent in inline
 *    operations. Above BUSY_ENTER the pool is used until that share drops under BUSY_LEAVE.
 *
 * Rule 1 exists because rule 2 alone misjudged a caller signing in a loop: its own JavaScript
 * is 25–45% of the time next to a ~25 µs signature, and a shared machine that preempts the
 * process adds the stolen time to "busy", so windows crossed BUSY_ENTER and signs ran pooled
 * (auto 0.49× against inline 0.65×). Rule 2 does protect a server: bench/inbox.mjs with its
 * receiver on `auto` ran at 0.94× of its baseline (medians of 6), on `pool` 0.98×, on `inline`
 * 0.63×. The receive pipeline (inbox, relay publish, agents) still asks for `pool` by default
 * (`ReceiveContext.crypto`); `auto` serves every other caller without costing a server.
 */
import { callsInFlight } from './in-flight.js'

/** A call starting this soon (ms) after our last operation ended comes from a chaining caller. */
const CHAINED_MS = 0.05
/** Length of one measuring window. Short, so a change of load is seen within a few ms. */
const WINDOW_MS = 10
/** Busy with other work for more than this share of a window: use the pool. */
const BUSY_ENTER = 0.5
/** Pooled, and other work fell under this share: back to inline. */
const BUSY_LEAVE = 0.3

interface Utilization {
  active: number
}
type EluFn = (previous?: Utilization) => Utilization

// Absent outside Node (another runtime resolving the `node` condition): then the loop cannot be
// measured, and `auto` runs inline whenever the caller is alone.
const elu: EluFn | undefined = (
  globalThis.performance as { eventLoopUtilization?: EluFn } | undefined
)?.eventLoopUtilization?.bind(globalThis.performance)

let windowStart = -Infinity
let windowElu: Utilization | undefined
let inlineMs = 0
let pooled = false
/** When (performance.now()) our last operation ended, inline or pooled. */
let lastEnd = -Infinity

/** Close the window that started at `windowStart` and open the next one. */
function measure(now: number): void {
  const current = elu?.()
  if (current && windowElu) {
    const other = (current.active - windowElu.active - inlineMs) / (now - windowStart)
    pooled = pooled ? other > BUSY_LEAVE : other > BUSY_ENTER
  }
  windowElu = current
  windowStart = now
  inlineMs = 0
}

/**
 * Whether an `auto` operation should run inline now. `now` is `performance.now()`; the caller
 * passes it on to {@link ranInline}.
 */
export function autoRunsInline(now: number): boolean {
  if (callsInFlight() > 1) return false
  if (now - lastEnd < CHAINED_MS) return true
  if (now - windowStart >= WINDOW_MS) measure(now)
  return !pooled
}

/** Record an operation that ran inline from `start` to `end` (ms), so it is not counted as load. */
export function ranInline(start: number, end: number): void {
  inlineMs += end - start
  lastEnd = end
}

/** Record the end of a pooled operation (its callback), for rule 1. */
export function ranPooled(): void {
  lastEnd = performance.now()
}

/** @internal For tests: the current choice and a way to start afresh. */
export const autoModeState = {
  get pooled(): boolean {
    return pooled
  },
  reset(): void {
    windowStart = -Infinity
    windowElu = undefined
    inlineMs = 0
    pooled = false
    lastEnd = -Infinity
  },
}
