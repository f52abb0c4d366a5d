import type { JsonValue } from '../types.js'

/** A deep copy that is JSON, else a `TypeError` (JSON would silently change `undefined`, `NaN`). */
export function cloneJsonValue(
  value: unknown,
  path = '$',
  seen: Set<object> = new Set(),
): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return value
    throw new TypeError(`storage: ${path} is ${value}, not a JSON number`)
  }
  if (typeof value !== 'object') {
    throw new TypeError(`storage: ${path} is ${typeof value}, not a JSON value`)
  }
  if (seen.has(value)) throw new TypeError(`storage: ${path} is a cycle, not a JSON value`)
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      const out: JsonValue[] = []
      for (let i = 0; i < value.length; i++)
        out.push(cloneJsonValue(value[i], `${path}[${i}]`, seen))
      return out
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError(`storage: ${path} is a ${proto?.constructor?.name ?? 'object'}, not JSON`)
    }
    const out: { [key: string]: JsonValue } = {}
    for (const key of Object.keys(value)) {
      const copy = cloneJsonValue((value as Record<string, unknown>)[key], `${path}.${key}`, seen)
      // `out['__proto__'] = …` would set the prototype instead of storing the member.
      Object.defineProperty(out, key, {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
    return out
  } finally {
    seen.delete(value)
  }
}
