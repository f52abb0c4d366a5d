import { defineMember, type JsonValue } from '../types.js'

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
      return Array.from(value, (v, i) => cloneJsonValue(v, `${path}[${i}]`, seen))
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError(`storage: ${path} is a ${proto?.constructor?.name ?? 'object'}, not JSON`)
    }
    const out: { [key: string]: JsonValue } = {}
    const o = value as Record<string, unknown>
    for (const key of Object.keys(o))
      defineMember(out, key, cloneJsonValue(o[key], `${path}.${key}`, seen))
    return out
  } finally {
    seen.delete(value)
  }
}
