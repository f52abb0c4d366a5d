/**
 * The fast path of the strict JSON parser (PROFILE §1): native `JSON.parse` does syntax and
 * value construction, then this proves on the result what `JSON.parse` hides. It only ever
 * accepts; anything it cannot prove goes to the exact parser (./parser.ts).
 */
import { isWellFormedString } from '../jcs.js'
import type { JsonObject } from '../types.js'
import { type IntegerMembers, isIJsonSafeNumber, mayBreakIntegerMembers } from './integers.js'

/** A `\u` escape of a surrogate half; rare except in ASCII-only writers (Python's default). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
/** An escaped colon, which would spoil the colon count below. */
const COLON_ESCAPE = /\\u003[aA]/

interface Tally {
  maxDepth: number
  checkStrings: boolean
  members: number
  colons: number
}

function countColons(s: string): number {
  let n = 0
  let i = s.indexOf(':')
  while (i !== -1) {
    n++
    i = s.indexOf(':', i + 1)
  }
  return n
}

/**
 * Native `JSON.parse`, then proof of what it cannot see. Returns `undefined` unless the text is
 * certainly acceptable; the exact parser then decides.
 */
export function fastParse(
  text: string,
  maxDepth: number,
  fromBytes: boolean,
  integers?: IntegerMembers,
): JsonObject | undefined {
  if (integers !== undefined && mayBreakIntegerMembers(text, integers)) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  // The walk uses for-in, by far the fastest way over JSON.parse's objects; an enumerable
  // property planted on Object.prototype would show up in it, so then the exact parser decides.
  for (const _ in EMPTY) return undefined
  // Raw lone surrogates (only a string input can have them; decoded bytes cannot).
  if (!fromBytes && !isWellFormedString(text)) return undefined
  let checkStrings = false
  if (text.indexOf('\\u') !== -1) {
    if (COLON_ESCAPE.test(text)) return undefined
    // With the text well-formed, a lone surrogate can now only come from an escape, and shows
    // in the decoded strings; escaped pairs (ASCII-only writers' emoji) are fine.
    checkStrings = SURROGATE_ESCAPE.test(text)
  }
  const tally: Tally = { maxDepth, checkStrings, members: 0, colons: 0 }
  if (!walk(value as Record<string, unknown>, 1, tally)) return undefined
  if (countColons(text) - tally.colons !== tally.members) return undefined
  return value as JsonObject
}

const EMPTY = {}

function visitString(s: string, tally: Tally): boolean {
  if (s.indexOf(':') !== -1) tally.colons += countColons(s)
  return !tally.checkStrings || isWellFormedString(s)
}

function visit(v: unknown, depth: number, tally: Tally): boolean {
  switch (typeof v) {
    case 'string':
      return visitString(v, tally)
    case 'number':
      return isIJsonSafeNumber(v)
    case 'object':
      return v === null || walk(v as Record<string, unknown> | unknown[], depth + 1, tally)
    default:
      return true
  }
}

function walk(v: Record<string, unknown> | unknown[], depth: number, tally: Tally): boolean {
  if (depth > tally.maxDepth) return false
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!visit(v[i], depth, tally)) return false
    return true
  }
  for (const k in v) {
    tally.members++
    if (!visitString(k, tally) || !visit(v[k], depth, tally)) return false
  }
  return true
}
