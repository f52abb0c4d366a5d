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

import { exactParse } from './strict-json/exact.js'
import { fastParse } from './strict-json/fast-path.js'
import { prepareStrictJson, type StrictJsonOptions, tooDeep } from './strict-json/prepare.js'
import type { JsonObject } from './types.js'

export type { NonIntegerLiteral } from './strict-json/integers.js'
export { nonIntegerLiteral } from './strict-json/integers.js'
export { isIJsonSafeNumber } from './strict-json/numbers.js'
export { INTEGER_MEMBERS, type StrictJsonOptions } from './strict-json/prepare.js'
export { parseStrictJsonAsync } from './strict-json-async.js'

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
  const p = prepareStrictJson(input, options)
  try {
    return fastParse(p.text, p.maxDepth, p.fromBytes, p.integers) ?? exactParse(p)
  } catch (e) {
    throw tooDeep(e)
  }
}
