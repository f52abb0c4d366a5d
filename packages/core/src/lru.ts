/**
 * A Map used as an LRU: a hit is moved to the end, the oldest entry is evicted first. Every
 * cache keyed by peer data (keys, documents) is bounded, so a flood of new peers cannot grow
 * memory.
 * @internal
 */
export class Lru<V> {
  readonly #map = new Map<string, V>()
  constructor(readonly max: number) {}
  get(key: string): V | undefined {
    const v = this.#map.get(key)
    if (v !== undefined) {
      this.#map.delete(key)
      this.#map.set(key, v)
    }
    return v
  }
  set(key: string, value: V): void {
    this.#map.delete(key)
    this.#map.set(key, value)
    if (this.#map.size > this.max) this.#map.delete(this.#map.keys().next().value!)
  }
}
