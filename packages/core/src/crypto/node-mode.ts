/**
 * The `auto` choice of the Node provider (see `CryptoMode`): run an Ed25519 operation inline on
 * the event loop, or hand it to libuv's thread pool. Measured (bench/sign-verify.mjs): one
 * at a time, inline wins (the hand-off costs about a signature); several in flight, the pool
 * wins. So: 0. other sign/verify calls in flight → pool; 1. the caller chains operations (this
 * call starts within CHAINED_MS of our last one) → inline; 2. else ask the event loop: busy
 * with work that is not ours (`eventLoopUtilization` over the last window, minus our inline
 * time) above BUSY_ENTER → pool until under BUSY_LEAVE. "Alone" cannot see a server's load (its
 * requests arrive one macrotask at a time), which is why rule 2 exists, and rule 1 keeps a
 * preempted caller signing in a loop from being judged busy.
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
