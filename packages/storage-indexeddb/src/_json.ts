import { cloneJsonValue } from '@agentmsg/core/encoding'

/** Deep copy of a JSON value, refusing anything else (shared with core's memory storage). */
export const cloneJson = cloneJsonValue

export function checkKey(key: unknown, what = ''): asserts key is string {
  if (typeof key !== 'string') throw new TypeError(`storage: ${what}key must be a string`)
}

/**
 * The smallest string greater than every string that starts with `prefix`, or `undefined` when
 * there is none (`''`, or a prefix of only U+FFFF). `prefix + '\uffff'` is not it: the key
 * `prefix + '\uffff\uffff'` starts with `prefix` and sorts after it.
 */
export function prefixEnd(prefix: string): string | undefined {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const unit = prefix.charCodeAt(i)
    // Code units, not code points: IndexedDB and `<` both compare strings unit by unit, and
    // a lone surrogate is a valid key unit here.
    if (unit < 0xffff) return prefix.slice(0, i) + String.fromCharCode(unit + 1)
  }
  return undefined
}
