/**
 * The bounded work queue between `accepted` (an inbox's 202) and the application (PROFILE §6
 * "202 → process"). Capacity is reserved before a message is accepted, so a receiver never
 * answers 202 for a message it has no room for, and memory never grows past `capacity` queued
 * messages.
 */

/** Options for {@link WorkQueue}. */
export interface WorkQueueOptions<T> {
  /** Most messages reserved, queued or running at once. */
  capacity: number
  /** Most `run` calls in flight. */
  concurrency: number
  /** Processes one item; its failure goes to `onError`. */
  run: (item: T) => Promise<void>
  onError: (error: unknown) => void
}

export class WorkQueue<T> {
  readonly #o: WorkQueueOptions<T>
  #items: T[] = []
  #head = 0
  #running = 0
  #reserved = 0
  #stopped = false
  #scheduled = false
  #idle: Array<() => void> = []

  constructor(options: WorkQueueOptions<T>) {
    if (!(options.capacity >= 1)) throw new RangeError('maxQueue must be ≥ 1')
    if (!(Number.isInteger(options.concurrency) && options.concurrency >= 1)) {
      throw new RangeError('concurrency must be an integer ≥ 1')
    }
    this.#o = options
  }

  /** Items accepted and not yet finished (queued or running). */
  get pending(): number {
    return this.#items.length - this.#head + this.#running
  }

  /** Take a slot for a message about to be accepted; false when full. */
  reserve(): boolean {
    if (this.pending + this.#reserved >= this.#o.capacity) return false
    this.#reserved++
    return true
  }

  /** Give back a slot that was not used. */
  release(): void {
    this.#reserved--
    this.#checkIdle()
  }

  /** Queue an item; `reserved` says it fills a slot taken with {@link reserve}. */
  push(item: T, reserved: boolean): void {
    if (reserved) this.#reserved--
    this.#items.push(item)
    this.#schedule()
  }

  /** Start no more items; those running finish. */
  stop(): void {
    this.#stopped = true
  }

  /** Resolves once nothing is reserved, queued or running. */
  drain(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  #schedule(): void {
    if (this.#scheduled || this.#stopped) return
    this.#scheduled = true
    // A macrotask, not a microtask: the 202 is written to the socket before the application's
    // synchronous work starts. `setImmediate` where there is one: Node rounds `setTimeout(0)` up
    // to 1 ms, which was most of a relay subscriber's publish→push p50 (issue 12 bench).
    nextMacrotask(() => {
      this.#scheduled = false
      this.#pump()
    })
  }

  #pump(): void {
    while (
      !this.#stopped &&
      this.#running < this.#o.concurrency &&
      this.#head < this.#items.length
    ) {
      const item = this.#items[this.#head] as T
      this.#items[this.#head++] = undefined as T
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head)
        this.#head = 0
      }
      this.#running++
      let task: Promise<void>
      try {
        task = this.#o.run(item)
      } catch (error) {
        task = Promise.reject(error)
      }
      task
        .catch((error: unknown) => this.#o.onError(error))
        .finally(() => {
          this.#running--
          this.#pump()
          this.#checkIdle()
        })
    }
  }

  #isIdle(): boolean {
    return this.#reserved === 0 && this.#running === 0 && this.#head >= this.#items.length
  }

  #checkIdle(): void {
    if (!this.#isIdle() || this.#idle.length === 0) return
    const waiters = this.#idle
    this.#idle = []
    for (const w of waiters) w()
  }
}

const setImmediateOrUndefined = (globalThis as { setImmediate?: (run: () => void) => unknown })
  .setImmediate

/** `setImmediate` (Node, Bun, Deno) or, in browsers, `setTimeout(0)`. */
const nextMacrotask: (run: () => void) => void = setImmediateOrUndefined
  ? (run) => void setImmediateOrUndefined(run)
  : (run) => void setTimeout(run, 0)
