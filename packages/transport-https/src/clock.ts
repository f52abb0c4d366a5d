/**
 * The time source of the retry schedule. The sender reads `now()` and sets its retry timers
 * through a {@link Clock}, so tests (and simulations) can replace the 24 hours of PROFILE §6
 * with a {@link ManualClock} and cover them in milliseconds.
 *
 * Only the schedule uses the clock. The timeout of a single attempt is a network timeout and
 * runs on real timers (inside ky), whatever clock is configured.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
  /** Call `fn` once, `ms` milliseconds from now; returns a handle for {@link Clock.clearTimeout}. */
  setTimeout(fn: () => void, ms: number): unknown
  /** Cancel a timer; unknown or already fired handles are ignored. */
  clearTimeout(handle: unknown): void
}

/** Longest delay `setTimeout` accepts (2^31 − 1 ms, about 24.8 days); longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647

/** The real clock: `Date.now()` and the global timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMER_MS)),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/** A {@link Clock} that only moves when told to. */
export interface ManualClock extends Clock {
  /**
   * Move time forward by `ms`, firing every timer that falls due on the way, earliest first
   * (ties in the order they were set). `now()` reads each timer's due time while it runs, and
   * timers set by a callback fire in the same call when they fall within the window.
   */
  advance(ms: number): void
  /** Fire timers, earliest first, moving time to each, until none is left. Returns how many fired. */
  runAll(): number
  /** Number of timers waiting. */
  pending(): number
  /** Due time of the earliest waiting timer, or `undefined` when none waits. */
  nextDue(): number | undefined
}

interface ManualTimer {
  due: number
  seq: number
  fn: () => void
}

/**
 * A clock for tests: time starts at `start` and moves only through `advance` and `runAll`.
 * Timer callbacks run synchronously inside those calls; work they start asynchronously (an
 * HTTP attempt) finishes later, so tests wait for the sender's events between advances.
 *
 * @example
 * const clock = createManualClock()
 * const sender = createSender({ clock, fetch })
 * sender.on('retry', (e) => clock.advance(e.delayMs))
 */
export function createManualClock(start = 0): ManualClock {
  let now = start
  let seq = 0
  const timers = new Map<number, ManualTimer>()

  const earliest = (limit: number): ManualTimer | undefined => {
    let best: ManualTimer | undefined
    for (const t of timers.values()) {
      if (t.due > limit) continue
      if (!best || t.due < best.due || (t.due === best.due && t.seq < best.seq)) best = t
    }
    return best
  }

  const fire = (t: ManualTimer): void => {
    timers.delete(t.seq)
    if (t.due > now) now = t.due
    t.fn()
  }

  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = ++seq
      const delay = Number.isFinite(ms) && ms > 0 ? ms : 0
      timers.set(id, { due: now + delay, seq: id, fn })
      return id
    },
    clearTimeout(handle) {
      if (typeof handle === 'number') timers.delete(handle)
    },
    advance(ms) {
      if (!(Number.isFinite(ms) && ms >= 0)) {
        throw new RangeError(`advance: ms must be a finite number >= 0, got ${ms}`)
      }
      const target = now + ms
      for (let t = earliest(target); t; t = earliest(target)) fire(t)
      now = target
    },
    runAll() {
      let fired = 0
      for (let t = earliest(Infinity); t; t = earliest(Infinity)) {
        // A callback that always sets another timer would loop forever; fail loudly instead.
        if (++fired > 100_000) throw new Error('runAll: more than 100000 timers fired')
        fire(t)
      }
      return fired
    },
    pending: () => timers.size,
    nextDue() {
      return earliest(Infinity)?.due
    },
  }
}
