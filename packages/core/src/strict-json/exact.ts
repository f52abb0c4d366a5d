/**
 * The exact path of the strict JSON parser (PROFILE §1): decides what the fast path could not
 * prove, and says what is wrong and where. ./strict-json-async.ts imports it only then.
 */
import type { JsonObject } from '../types.js'
import { Parser } from './parser.js'
import type { PreparedStrictJson } from './prepare.js'

/** Parse prepared input with the exact RFC 8259 parser. */
export function exactParse(p: PreparedStrictJson): JsonObject {
  return new Parser(p.text, p, p.fromBytes).parseDocument()
}
