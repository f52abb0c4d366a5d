/**
 * PROFILE §1's integer fields, written without fraction or exponent. Once parsed, `1.0`, `1e0`
 * and `1` are the same double, and JCS prints all three as `1`, so a message signed over
 * `"sequence":1` still verifies when sent as `"sequence":1.0` — yet a parser with an integer
 * type (Python, Go's json.Number) reads a float there. Only the parser sees the literal, so
 * it reports it: the members named by the caller are checked where they are parsed.
 */
import type { JsonObject } from '../types.js'

/**
 * PROFILE §1's number rule, for both parser paths: finite, and not an integer beyond ±(2^53−1).
 * Every double of magnitude 2^53 or more is an integer, so it is a magnitude test.
 */
export function isIJsonSafeNumber(n: number): boolean {
  return Math.abs(n) <= Number.MAX_SAFE_INTEGER
}

/** A member name a pattern may end with: every integer field of PROFILE §1 is one. */
const NAME = /^[A-Za-z0-9_]+$/

/**
 * The compiled form of the `integerMembers` option: paths from the top level, `*` matching
 * any member or index.
 */
export interface IntegerMembers {
  readonly paths: readonly (readonly string[])[]
  /** A `"name"`: followed by a literal with a fraction or exponent, for one of the names. */
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

/**
 * An escape of a character that can appear in a name (`\u0073` for `s`): such a name hides
 * from `suspect`, so the fast path leaves the text to the exact parser. Writers escape only
 * non-ASCII and control characters (and, Go's, `<>&`), none of them matched here.
 */
const ESCAPED_NAME_CHAR = /\\u00(?:3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])/

/**
 * Whether the text may hold a named member written with a fraction or exponent. A false
 * alarm (the name inside a string, or deeper than the pattern) only costs the exact parser.
 */
export function mayBreakIntegerMembers(text: string, integers: IntegerMembers): boolean {
  return integers.suspect.test(text) || (text.indexOf('\\u') !== -1 && ESCAPED_NAME_CHAR.test(text))
}

/** Whether the literal `text.slice(start, end)` (a valid JSON number) has no fraction or exponent. */
export function isPlainInteger(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x2e || c === 0x65 || c === 0x45) return false
  }
  return true
}

/** Whether the member path (names and indexes from the top) is one of the patterns. */
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
  /** The member's name in the object that holds it. */
  readonly member: string
  /** The literal as written, e.g. `1.0`. */
  readonly literal: string
}

const marks = new WeakMap<object, NonIntegerLiteral>()

/** Record, on the object being built, the first of its members written as a non-integer. */
export function markNonInteger(holder: JsonObject, member: string, literal: string): void {
  if (!marks.has(holder)) marks.set(holder, { member, literal })
}

/**
 * The member of `value` (an object returned by `parseStrictJson` in `'mark'` mode, or nested in
 * one) that a pattern named and that was written with a fraction or exponent, if any.
 */
export function nonIntegerLiteral(value: unknown): NonIntegerLiteral | undefined {
  return typeof value === 'object' && value !== null ? marks.get(value) : undefined
}
