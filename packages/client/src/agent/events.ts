/**
 * The agent's events: listeners, `messages()` iterators, and the wait for a first consumer
 * (a message is not handed to nobody).
 */
import type { AgentErrorEvent, AgentEvents, AgentListener, ReceivedMessage } from './types.js'

type Sink = { push(m: ReceivedMessage): void; end(): void }
type AnyListener = (event: never) => unknown

export class AgentEmitter {
  readonly #listeners = new Map<keyof AgentEvents, Set<AnyListener>>()
  readonly #iterators = new Set<Sink>()
  /** Deliveries waiting for the application to attach a message listener or iterator. */
  #consumerWaiters: Array<() => void> = []
  readonly #onError: ((error: unknown) => void) | undefined
  #closed = false

  constructor(onError?: (error: unknown) => void) {
    this.#onError = onError
  }

  on<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): () => void {
    let set = this.#listeners.get(event)
    if (!set) this.#listeners.set(event, (set = new Set()))
    set.add(listener as AnyListener)
    if (event === 'message') this.#wakeConsumers()
    return () => this.off(event, listener)
  }

  off<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): void {
    this.#listeners.get(event)?.delete(listener as AnyListener)
  }

  /** Call listeners; returns the promises they returned (a throw becomes a rejection). */
  emit<K extends keyof AgentEvents>(event: K, payload: AgentEvents[K]): Promise<unknown>[] {
    const out: Promise<unknown>[] = []
    for (const l of [...(this.#listeners.get(event) ?? [])]) {
      try {
        const r = (l as (e: AgentEvents[K]) => unknown)(payload)
        if (r && typeof (r as Promise<unknown>).then === 'function') out.push(r as Promise<unknown>)
      } catch (error) {
        if (event === 'error') {
          queueMicrotask(() => {
            throw error
          })
        } else out.push(Promise.reject(error))
      }
    }
    return out
  }

  /** Report a failure nobody else sees: `onError`, then `error` listeners. */
  error(event: AgentErrorEvent): void {
    try {
      this.#onError?.(event.error)
    } catch {
      // a throwing reporter must not break the pipeline
    }
    void this.emit('error', event)
  }

  /**
   * Hand a message to every iterator and `message` listener; resolves once every listener
   * settled (their failures are reported as `error` events).
   */
  async dispatch(received: ReceivedMessage): Promise<void> {
    for (const it of this.#iterators) it.push(received)
    const { message, from } = received
    for (const r of await Promise.allSettled(this.emit('message', received))) {
      if (r.status === 'rejected') this.error({ error: r.reason, message, from })
    }
  }

  /**
   * Transports start inside createAgent, before the application can attach its listener: a
   * message taken from storage or a mailbox then would be handled with nobody listening. So
   * processing waits for a consumer. After `close()` it never resolves: the message stays in
   * the receiver's storage and the next run hands it over (PROFILE §6 persist → process).
   */
  async waitForConsumer(): Promise<void> {
    while (!this.#hasConsumer() || this.#closed) {
      await new Promise<void>((resolve) => {
        if (!this.#closed) this.#consumerWaiters.push(resolve)
      })
    }
  }

  messages(): AsyncIterable<ReceivedMessage> {
    const buffer: ReceivedMessage[] = []
    let wake: (() => void) | undefined
    let ended = this.#closed
    const sink: Sink = {
      push: (m) => {
        buffer.push(m)
        wake?.()
      },
      end: () => {
        ended = true
        wake?.()
      },
    }
    const iterators = this.#iterators
    iterators.add(sink)
    this.#wakeConsumers()
    return {
      [Symbol.asyncIterator]: () => ({
        async next(): Promise<IteratorResult<ReceivedMessage>> {
          while (buffer.length === 0 && !ended) {
            await new Promise<void>((r) => (wake = r))
            wake = undefined
          }
          if (buffer.length > 0) return { value: buffer.shift()!, done: false }
          iterators.delete(sink)
          return { value: undefined, done: true }
        },
        async return(): Promise<IteratorResult<ReceivedMessage>> {
          iterators.delete(sink)
          ended = true
          return { value: undefined, done: true }
        },
      }),
    }
  }

  /** No more consumers: iterators end, waiting deliveries stay where they are. */
  close(): void {
    this.#closed = true
    // Waiting deliveries are dropped, never woken (see waitForConsumer).
    this.#consumerWaiters = []
    for (const it of this.#iterators) it.end()
    this.#iterators.clear()
  }

  #hasConsumer(): boolean {
    return (this.#listeners.get('message')?.size ?? 0) > 0 || this.#iterators.size > 0
  }

  #wakeConsumers(): void {
    for (const wake of this.#consumerWaiters.splice(0)) wake()
  }
}
