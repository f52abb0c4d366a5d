/**
 * The I-JSON (RFC 7493) parser of PROFILE §1: everything that reaches a signature check or an
 * application goes through here, so that no two readers of one message can see different values.
 * Browser-safe: no Node built-ins.
 */

import { fastParse } from './strict-json/fast-path.js'
import { exactParse } from './strict-json/parser.js'
import { prepareStrictJson, type StrictJsonOptions, tooDeep } from './strict-json/prepare.js'
import type { JsonObject } from './types.js'

/**
 * Parse JSON text under PROFILE §1 (I-JSON, RFC 7493) and return its top-level object.
 *
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
