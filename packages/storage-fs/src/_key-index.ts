/**
 * The set of stored keys, listable in ascending UTF-16 order (as `<` compares strings). Loaded
 * from the directory at open and kept in step with every write, so `list` never reads the
 * directory. The sorted array is repaired lazily, as in core's `memoryStorage`: writes only note
 * new keys, and the next `list` sorts those and merges them in, so a burst of puts stays linear.
 */
export class KeyIndex {
  readonly #present = new Set<string>()
  #sorted: string[] = []
  #added: string[] = []
  #stale = false

  has(key: string): boolean {
    return this.#present.has(key)
  }

  add(key: string): void {
    if (this.#present.has(key)) return
    this.#present.add(key)
    this.#added.push(key)
  }

  remove(key: string): void {
    if (this.#present.delete(key)) this.#stale = true
  }

  /** Up to `limit` keys starting with `prefix`, strictly after `after` when given. */
  range(prefix: string, after: string | undefined, limit: number): string[] {
    const keys = this.#keys()
    const from = after !== undefined && after >= prefix ? after : prefix
    let i = lowerBound(keys, from)
    if (after !== undefined && keys[i] === after) i++
    const out: string[] = []
    for (; i < keys.length && out.length < limit; i++) {
      const key = keys[i] as string
      if (!key.startsWith(prefix)) break
      out.push(key)
    }
    return out
  }

  #keys(): string[] {
    if (this.#added.length === 0 && !this.#stale) return this.#sorted
    const added = this.#added.sort()
    const sorted = this.#sorted
    const merged: string[] = []
    let i = 0
    let j = 0
    while (i < sorted.length || j < added.length) {
      const a = sorted[i]
      const b = added[j]
      let next: string
      if (b === undefined || (a !== undefined && a <= b)) {
        next = a as string
        i++
      } else {
        next = b
        j++
      }
      // A key deleted and added again is in both arrays; the merge puts the copies side by side.
      if (this.#present.has(next) && merged[merged.length - 1] !== next) merged.push(next)
    }
    this.#sorted = merged
    this.#added = []
    this.#stale = false
    return merged
  }
}

/** Index of the first element of `keys` that is `>= target`. */
function lowerBound(keys: string[], target: string): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((keys[mid] as string) < target) lo = mid + 1
    else hi = mid
  }
  return lo
}
