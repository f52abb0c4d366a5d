/**
 * What both paths of the strict JSON parser start from (PROFILE §1): the options checked and
 * compiled, and the text (bytes decoded as strict UTF-8). Apart from the exact parser, so the
 * fast path runs without loading it (./strict-json-async.ts: a browser agent's bundle).
 */
import { invalidFormat } from '../errors.js'
import { PROFILE } from '../profile.js'
import { compileIntegerMembers, type IntegerMembers } from './integers.js'
import { decodeUtf8 } from './utf8.js'

/**
 * PROFILE §1's integer fields, members of a message or an identity document: written without
 * fraction or exponent. The `integerMembers` to pass when parsing either at its top level.
 */
export const INTEGER_MEMBERS: readonly string[] = Object.freeze([
  'sequence',
  'ttl_seconds',
  'auth_level',
  'agentmsg',
])

/** Options for {@link parseStrictJson}. */
export interface StrictJsonOptions {
  /**
   * Deepest nesting accepted; objects and arrays count and the top-level object is depth 1.
   * @default PROFILE.maxJsonDepth
   */
  maxDepth?: number
  /**
   * Members whose number literal must be a plain integer, `-?[0-9]+`: a fraction or exponent
   * (`1.0`, `1e0`, `10e-1`) is refused though its value is an integer (PROFILE §1). Each entry
   * is a path of member names from the top level joined by `.`, where `*` matches any member
   * or array index: {@link INTEGER_MEMBERS} for a message or document itself,
   * `message.sequence` for one inside a WebSocket frame, `messages.*.sequence` in a page.
   * Names are `[A-Za-z0-9_]+`. A number in any other place may be written either way.
   */
  integerMembers?: readonly string[]
  /**
   * What a member of `integerMembers` written with a fraction or exponent does. `'throw'`
   * (default) refuses the whole text as `invalid_format`, the member path in `field`.
   * `'mark'` accepts the text and records the member on the object that holds it, for
   * {@link nonIntegerLiteral}: a relay envelope carries many messages, and one bad message
   * must be refused alone (the receive pipeline's parse step does), not the whole page.
   * @default 'throw'
   */
  onNonInteger?: 'throw' | 'mark'
}

/** The checked options and the text of one parse. */
export interface PreparedStrictJson {
  text: string
  fromBytes: boolean
  maxDepth: number
  integers: IntegerMembers | undefined
  onNonInteger: 'throw' | 'mark'
}

/** Check the options and decode the input. */
export function prepareStrictJson(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): PreparedStrictJson {
  const maxDepth = options?.maxDepth ?? PROFILE.maxJsonDepth
  if (!Number.isInteger(maxDepth) || maxDepth < 1) {
    throw new RangeError(`maxDepth must be a positive integer, got ${maxDepth}`)
  }
  const onNonInteger = options?.onNonInteger ?? 'throw'
  if (onNonInteger !== 'throw' && onNonInteger !== 'mark') {
    throw new RangeError(`onNonInteger must be 'throw' or 'mark', got ${String(onNonInteger)}`)
  }
  const members = options?.integerMembers
  const integers =
    members === undefined || members.length === 0 ? undefined : compileIntegerMembers(members)
  const fromBytes = typeof input !== 'string'
  const text = fromBytes ? decodeUtf8(input) : input
  return { text, fromBytes, maxDepth, integers, onNonInteger }
}

/**
 * Both paths recurse at most maxDepth deep; only a caller-raised maxDepth can make that outrun
 * the stack: such a RangeError is a refusal, anything else is thrown as it is.
 */
export function tooDeep(e: unknown): unknown {
  return e instanceof RangeError ? invalidFormat('JSON nested too deeply to parse') : e
}
