// PROFILE §1's integer fields, without fraction or exponent: JCS prints `1.0` as `1`, yet a typed
// parser (Python, Go) reads a float. Only a parser sees the literal, so it checks them.
import type { JsonObject } from '../types.js'

/** PROFILE §1's number rule: not an integer beyond ±(2^53−1) (every such double is one). */
export function isIJsonSafeNumber(n: number): boolean {
  return Math.abs(n) <= Number.MAX_SAFE_INTEGER
}

const NAME = /^[A-Za-z0-9_]+$/

/** The compiled `integerMembers` option: paths from the top, `*` matching any member or index. */
export interface IntegerMembers {
  readonly paths: readonly (readonly string[])[]
  /** A named member followed by a literal with a fraction or exponent. */
  readonly suspect: RegExp
}

const compiled = new WeakMap<readonly string[], IntegerMembers>()

/** Compile (once per array: callers pass constants) the `integerMembers` patterns. */
export function compileIntegerMembers(patterns: readonly string[]): IntegerMembers {
  let c = compiled.get(patterns)
  if (c !== undefined) return c
  const names = new Set<string>()
  const paths = patterns.map((p) => {
    const path = p.split('.')
    const last = path[path.length - 1] as string
    if (!NAME.test(last) || path.some((s) => s !== '*' && !NAME.test(s))) {
      throw new RangeError(
        `integerMembers: ${JSON.stringify(p)} is not a path of member names ([A-Za-z0-9_]+ or *) ending with a name`,
      )
    }
    names.add(last)
    return path
  })
  const ws = '[ \\t\\n\\r]*'
  const suspect = new RegExp(`"(?:${[...names].join('|')})"${ws}:${ws}-?[0-9]+[.eE]`)
  c = { paths, suspect }
  compiled.set(patterns, c)
  return c
}

// An escape of a name character (`\u0073`) hides a name from `suspect`: then the exact parser
// decides. Writers escape only non-ASCII and control characters (Go: `<>&`), none matched here.
const ESCAPED_NAME_CHAR = /\\u00(?:3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])/

/** Whether a named member may be written with a fraction or exponent (false alarms cost little). */
export function mayBreakIntegerMembers(text: string, integers: IntegerMembers): boolean {
  return integers.suspect.test(text) || (text.indexOf('\\u') !== -1 && ESCAPED_NAME_CHAR.test(text))
}

export function isPlainInteger(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x2e || c === 0x65 || c === 0x45) return false
  }
  return true
}

export function matchesIntegerMember(
  integers: IntegerMembers,
  path: readonly (string | number)[],
): boolean {
  next: for (const p of integers.paths) {
    if (p.length !== path.length) continue
    for (let i = 0; i < p.length; i++) {
      const s = p[i]
      if (s !== '*' && s !== path[i]) continue next
    }
    return true
  }
  return false
}

/** A named member written with a fraction or exponent, found in `'mark'` mode. */
export interface NonIntegerLiteral {
  readonly member: string
  /** As written, e.g. `1.0`. */
  readonly literal: string
}

const marks = new WeakMap<object, NonIntegerLiteral>()

export function markNonInteger(holder: JsonObject, member: string, literal: string): void {
  if (!marks.has(holder)) marks.set(holder, { member, literal })
}

/** The named member of `value` (parsed in `'mark'` mode) written as a non-integer, if any. */
export function nonIntegerLiteral(value: unknown): NonIntegerLiteral | undefined {
  return typeof value === 'object' && value !== null ? marks.get(value) : undefined
}
