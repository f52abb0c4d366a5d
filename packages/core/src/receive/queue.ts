// The bounded queue between `accepted` and the application (PROFILE §6): a slot is reserved before
// a message is accepted, so a receiver never answers 202 for one it has no room for.
import { positiveInt } from '../errors.js'

interface WorkQueueOptions<T> {
  capacity: number
  concurrency: number
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
    positiveInt(options.concurrency, 'concurrency')
    this.#o = options
  }

  get pending(): number {
    return this.#items.length - this.#head + this.#running
  }

  /** Take a slot for a message about to be accepted; false when full. */
  reserve(): boolean {
    if (this.pending + this.#reserved >= this.#o.capacity) return false
    this.#reserved++
    return true
  }

  release(): void {
    this.#reserved--
    this.#checkIdle()
  }

  /** Queue an item; `reserved`: it fills a slot taken with {@link reserve}. */
  push(item: T, reserved: boolean): void {
    if (reserved) this.#reserved--
    this.#items.push(item)
    this.#schedule()
  }

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
    // A macrotask: the 202 is written before the application's synchronous work starts. Node
    // rounds `setTimeout(0)` up to 1 ms (most of a relay push p50), hence `setImmediate`.
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
      // `run` is the receiver's async step: it rejects, never throws.
      this.#o
        .run(item)
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

const immediate = (globalThis as { setImmediate?: (run: () => void) => unknown }).setImmediate

const nextMacrotask = (run: () => void): void =>
  void (immediate ? immediate(run) : setTimeout(run, 0))
