// The I-JSON (RFC 7493) parser of PROFILE §1: everything that reaches a signature check or an
// application goes through it, so no two readers of one message see different values.
import { fastParse } from './strict-json/fast-path.js'
import { exactParse } from './strict-json/parser.js'
import { parseWith, type StrictJsonOptions } from './strict-json/prepare.js'
import type { JsonObject } from './types.js'

/** Parse JSON text under PROFILE §1 (I-JSON, RFC 7493) and return its top-level object. */
export function parseStrictJson(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): JsonObject {
  return parseWith(input, options, (p) => fastParse(p) ?? exactParse(p))
}
