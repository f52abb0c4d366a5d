import type { JsonValue } from '@agentmsg/core'

/**
 * `JSON.stringify(value)`, after checking that `value` is exactly JSON: plain objects, arrays
 * without holes, strings, finite numbers, booleans and null. Anything else throws a `TypeError`
 * naming the path, because writing it would silently change it (JSON drops `undefined`, turns
 * `NaN` into `null` and a `Date` into a string). Same rules as core's `memoryStorage`.
 */
export function jsonText(value: unknown): string {
  checkJson(value, '$', new Set())
  return JSON.stringify(value)
}

function checkJson(value: unknown, path: string, seen: Set<object>): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return
    throw new TypeError(`storage: ${path} is ${value}, not a JSON number`)
  }
  if (typeof value !== 'object') {
    throw new TypeError(`storage: ${path} is ${typeof value}, not a JSON value`)
  }
  if (seen.has(value)) throw new TypeError(`storage: ${path} is a cycle, not a JSON value`)
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        // `i in value` catches holes, which JSON.stringify would turn into null.
        if (!(i in value)) throw new TypeError(`storage: ${path}[${i}] is a hole, not JSON`)
        checkJson(value[i], `${path}[${i}]`, seen)
      }
      return
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError(`storage: ${path} is a ${proto?.constructor?.name ?? 'object'}, not JSON`)
    }
    for (const key of Object.keys(value)) {
      checkJson((value as Record<string, unknown>)[key], `${path}.${key}`, seen)
    }
  } finally {
    seen.delete(value)
  }
}

/** The contents of a data file: the key and its value, so a file can always be identified. */
export function entryText(key: string, valueText: string): string {
  return `[${JSON.stringify(key)},${valueText}]`
}

/** Parses what {@link entryText} wrote. */
export function parseEntry(text: string): [key: string, value: JsonValue] {
  const parsed = JSON.parse(text) as unknown
  if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'string') {
    throw new Error('storage-fs: malformed data file')
  }
  return parsed as [string, JsonValue]
}
