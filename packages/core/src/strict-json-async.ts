/**
 * `parseStrictJsonAsync`: the same verdict as `parseStrictJson` (PROFILE §1), with the exact
 * parser imported on first need. Well-formed messages from honest writers all pass the fast path
 * (native `JSON.parse` plus proofs), so a receiver that uses this loads the exact parser only
 * for input it must refuse or cannot prove at once (a browser agent's bundle stays small).
 */
import { fastParse } from './strict-json/fast-path.js'
import { prepareStrictJson, type StrictJsonOptions, tooDeep } from './strict-json/prepare.js'
import type { JsonObject } from './types.js'

/**
 * {@link parseStrictJson}, resolving with the same object or rejecting with the same error.
 * The fast path runs at once; only input it cannot prove waits for the exact parser's import.
 */
export async function parseStrictJsonAsync(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): Promise<JsonObject> {
  const value = parseStrictJsonFast(input, options)
  return value ?? parseStrictJsonExact(input, options)
}

/**
 * The fast path alone: the parsed object when it can prove the text acceptable, else
 * `undefined` (then {@link parseStrictJsonExact} decides). Throws what preparing throws (bad
 * options, bytes that are not UTF-8).
 * @internal
 */
export function parseStrictJsonFast(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): JsonObject | undefined {
  const p = prepareStrictJson(input, options)
  try {
    return fastParse(p.text, p.maxDepth, p.fromBytes, p.integers)
  } catch (e) {
    throw tooDeep(e)
  }
}

/** The exact parser's verdict, imported on first use. @internal */
export async function parseStrictJsonExact(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): Promise<JsonObject> {
  const { exactParse } = await import('./strict-json/parser.js')
  const p = prepareStrictJson(input, options)
  try {
    return exactParse(p)
  } catch (e) {
    throw tooDeep(e)
  }
}
