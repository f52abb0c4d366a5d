/**
 * The Node provider's `auto` mode: inline or the thread pool. Measured (bench/sign-verify.mjs):
 * one at a time inline wins (the hand-off costs about a signature), several in flight the pool.
 * So: other calls in flight → pool; a caller chaining operations (within CHAINED_MS of our last)
 * → inline; else the event loop busy with other work (above BUSY_ENTER, until under BUSY_LEAVE)
 * → pool, since a server's requests arrive one macrotask at a time and never look "in flight".
 */
import { callsInFlight } from './provider.js'

const CHAINED_MS = 0.05
// Short windows, so a change of load is seen within a few ms.
const WINDOW_MS = 10
const BUSY_ENTER = 0.5
const BUSY_LEAVE = 0.3

interface Utilization {
  active: number
}
type EluFn = (previous?: Utilization) => Utilization

// Absent outside Node: the loop cannot be measured, and `auto` runs inline when alone.
const elu: EluFn | undefined = (
  globalThis.performance as { eventLoopUtilization?: EluFn } | undefined
)?.eventLoopUtilization?.bind(globalThis.performance)

let windowStart = -Infinity
let windowElu: Utilization | undefined
let inlineMs = 0
let pooled = false
let lastEnd = -Infinity

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

/** Whether an `auto` operation runs inline now (`now`: performance.now(), for {@link ranInline}). */
export function autoRunsInline(now: number): boolean {
  if (callsInFlight() > 1) return false
  if (now - lastEnd < CHAINED_MS) return true
  if (now - windowStart >= WINDOW_MS) measure(now)
  return !pooled
}

/** An operation ran inline from `start` to `end`: not counted as load. */
export function ranInline(start: number, end: number): void {
  inlineMs += end - start
  lastEnd = end
}

export function ranPooled(): void {
  lastEnd = performance.now()
}

/** For tests: the current choice and a way to start afresh. */
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
