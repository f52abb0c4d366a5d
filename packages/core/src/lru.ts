import { constantTimeEqual } from './bytes.js'

/** A Map used as an LRU: every cache keyed by peer data is bounded, so a flood cannot grow it. */
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

/** One char per byte: a cheap, exact Map key. */
const latin1 = (bytes: Uint8Array) => String.fromCharCode.apply(null, bytes as unknown as number[])

/** `make(bytes)`, remembered for the last `max` distinct byte strings. */
export function bytesCache<V>(
  max: number,
  make: (bytes: Uint8Array) => V,
  key: (bytes: Uint8Array) => string = latin1,
): (bytes: Uint8Array) => V {
  const lru = new Lru<V>(max)
  return (bytes) => {
    const k = key(bytes)
    let value = lru.get(k)
    if (value === undefined) {
      value = make(bytes)
      lru.set(k, value)
    }
    return value
  }
}

// Per-seed provider state (one per identity), by array object, else by content; the entry keeps
// a private copy, so a caller overwriting its array cannot poison the cache.
export function seedCache<E>(create: (seed: Uint8Array) => E): (seed: Uint8Array) => E & Seeded {
  const byValue = bytesCache(64, (seed): E & Seeded => ({ ...create(seed), seed: seed.slice() }))
  const byObject = new WeakMap<Uint8Array, E & Seeded>()
  return (seed) => {
    if (seed.length !== 32) throw new RangeError('Ed25519 seed must be 32 bytes')
    const hit = byObject.get(seed)
    if (hit && constantTimeEqual(hit.seed, seed)) return hit
    const entry = byValue(seed)
    byObject.set(seed, entry)
    return entry
  }
}

interface Seeded {
  seed: Uint8Array
}
