/** What both paths of the strict JSON parser start from (PROFILE §1): options and text. */
import { invalidFormat, positiveInt } from '../errors.js'
import { PROFILE } from '../profile.js'
import { compileIntegerMembers, type IntegerMembers } from './integers.js'
import { decodeUtf8 } from './utf8.js'

/** PROFILE §1's integer fields of a message or an identity document, for `integerMembers`. */
export const INTEGER_MEMBERS: readonly string[] = Object.freeze([
  'sequence',
  'ttl_seconds',
  'auth_level',
  'agentmsg',
])

/** Options for {@link parseStrictJson}. */
export interface StrictJsonOptions {
  /** Deepest nesting accepted, the top-level object at depth 1. @default PROFILE.maxJsonDepth */
  maxDepth?: number
  /**
   * Members whose literal must be a plain integer `-?[0-9]+` (PROFILE §1): `.`-joined paths from
   * the top, `*` matching any member or index (`messages.*.sequence`).
   */
  integerMembers?: readonly string[]
  /**
   * `'throw'` refuses the text; `'mark'` records the member for {@link nonIntegerLiteral}, so
   * one bad message in a relay page is refused alone. @default 'throw'
   */
  onNonInteger?: 'throw' | 'mark'
}

export interface PreparedStrictJson {
  text: string
  fromBytes: boolean
  maxDepth: number
  integers: IntegerMembers | undefined
  onNonInteger: 'throw' | 'mark'
}

/** `parse` of the prepared input; a stack overflow (a caller-raised maxDepth) is a refusal. */
export function parseWith<T>(
  input: string | Uint8Array,
  options: StrictJsonOptions | undefined,
  parse: (p: PreparedStrictJson) => T,
): T {
  const maxDepth = positiveInt(options?.maxDepth ?? PROFILE.maxJsonDepth, 'maxDepth')
  const onNonInteger = options?.onNonInteger ?? 'throw'
  if (onNonInteger !== 'throw' && onNonInteger !== 'mark') {
    throw new RangeError(`onNonInteger must be 'throw' or 'mark', got ${String(onNonInteger)}`)
  }
  const members = options?.integerMembers
  const integers = members?.length ? compileIntegerMembers(members) : undefined
  const fromBytes = typeof input !== 'string'
  const text = fromBytes ? decodeUtf8(input) : input
  try {
    return parse({ text, fromBytes, maxDepth, integers, onNonInteger })
  } catch (e) {
    throw e instanceof RangeError ? invalidFormat('JSON nested too deeply to parse') : e
  }
}
