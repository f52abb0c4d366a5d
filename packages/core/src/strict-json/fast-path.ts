// The strict parser's fast path (PROFILE §1): native `JSON.parse`, then proof of what it hides.
// It only ever accepts; the exact parser decides the rest.
import { isWellFormedString } from '../jcs.js'
import type { JsonObject } from '../types.js'
import { isIJsonSafeNumber, mayBreakIntegerMembers } from './integers.js'
import type { PreparedStrictJson } from './prepare.js'

// A `\u` escape of a surrogate half (ASCII-only writers); an escaped colon spoils the count.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
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

/** The object, or `undefined` unless the text is certainly acceptable. */
export function fastParse(p: PreparedStrictJson): JsonObject | undefined {
  const { text, maxDepth, fromBytes, integers } = p
  if (integers !== undefined && mayBreakIntegerMembers(text, integers)) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  // for-in is by far the fastest walk, but would see an enumerable Object.prototype property.
  for (const _ in EMPTY) return undefined
  // Raw lone surrogates: only a string input can have them.
  if (!fromBytes && !isWellFormedString(text)) return undefined
  let checkStrings = false
  if (text.indexOf('\\u') !== -1) {
    if (COLON_ESCAPE.test(text)) return undefined
    // A lone surrogate can now only come from an escape: the decoded strings are checked.
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
