/**
 * The I-JSON (RFC 7493) parser of PROFILE §1: everything that reaches a signature check or an
 * application goes through here, so that no two readers of one message can see different values.
 * Browser-safe: no Node built-ins.
 *
 * Two paths with one verdict. The fast path (./strict-json/fast-path.ts) lets native
 * `JSON.parse` do syntax and value construction, then proves on the result what `JSON.parse`
 * hides; it only ever accepts. Anything it cannot prove goes to an exact hand-written RFC 8259
 * parser (./strict-json/parser.ts on ./strict-json/scanner.ts), which decides and, when it
 * refuses, says what is wrong and where.
 */

import { invalidFormat } from './errors.js'
import { fastParse } from './strict-json/fast-path.js'
import { compileIntegerMembers } from './strict-json/integers.js'
import { Parser } from './strict-json/parser.js'
import { decodeUtf8 } from './strict-json/utf8.js'
import type { JsonObject } from './types.js'

export type { NonIntegerLiteral } from './strict-json/integers.js'
export { nonIntegerLiteral } from './strict-json/integers.js'
export { isIJsonSafeNumber } from './strict-json/scanner.js'

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
   * @default 64
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

const DEFAULT_MAX_DEPTH = 64

/**
 * Parse JSON text under PROFILE §1 (I-JSON, RFC 7493) and return its top-level object.
 *
 * Refused, each as `invalid_format` with the place named (member path in `field`, and an offset:
 * bytes for a `Uint8Array`, UTF-16 code units for a string):
 * - anything outside the RFC 8259 grammar: comments, trailing commas, single quotes, raw control
 *   characters in strings, leading zeros, whitespace other than space/tab/LF/CR, trailing data;
 * - invalid UTF-8 (for bytes) and a leading byte order mark, in bytes or as U+FEFF in a string
 *   (RFC 8259 §8.1 forbids sending one; accepting it would let two byte strings carry one message);
 * - duplicate member names at any depth, compared after unescaping (`"a"` and `"\u0061"` clash);
 * - lone surrogates, raw (in a string input) or escaped (`"\ud800"`);
 * - a top level that is not an object, and nesting deeper than `maxDepth`;
 * - number literals that overflow a double (`1e400`) or denote an integer beyond ±(2^53−1)
 *   (`12345678901234567890`, `1e20`, `1.5e300`);
 * - a member named in `integerMembers` written with a fraction or exponent (unless marked).
 *
 * @throws AgentMsgError `invalid_format`.
 * @example
 * const msg = parseStrictJson(await request.bytes(), { integerMembers: INTEGER_MEMBERS })
 */
export function parseStrictJson(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): JsonObject {
  const maxDepth = options?.maxDepth ?? DEFAULT_MAX_DEPTH
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
  try {
    return (
      fastParse(text, maxDepth, fromBytes, integers) ??
      new Parser(text, { maxDepth, integers, onNonInteger }, fromBytes).parseDocument()
    )
  } catch (e) {
    // Both paths recurse at most maxDepth deep; only a caller-raised maxDepth can make that
    // outrun the stack.
    if (e instanceof RangeError) throw invalidFormat('JSON nested too deeply to parse')
    throw e
  }
}
