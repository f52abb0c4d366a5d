/** A small typed event emitter whose throwing listeners stop neither the others nor the emitter. */
export class Emitter<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<(event: never) => void>>()

  on<K extends keyof Events>(event: K, listener: (event: Events[K]) => void): () => void {
    let set = this.#listeners.get(event)
    if (!set) this.#listeners.set(event, (set = new Set()))
    set.add(listener as (event: never) => void)
    return () => this.off(event, listener)
  }

  off<K extends keyof Events>(event: K, listener: (event: Events[K]) => void): void {
    this.#listeners.get(event)?.delete(listener as (event: never) => void)
  }

  emit<K extends keyof Events>(name: K, event: Events[K]): void {
    for (const listener of [...(this.#listeners.get(name) ?? [])]) {
      try {
        ;(listener as (e: Events[K]) => void)(event)
      } catch (error) {
        // As EventTarget does: rethrown asynchronously, where it is reported but harms nothing.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }
}
