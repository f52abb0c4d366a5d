// `parseStrictJson` with the exact parser imported on first need: honest writers' messages pass the
// fast path, so a browser agent's bundle stays small.
import { fastParse } from './strict-json/fast-path.js'
import { parseWith, type StrictJsonOptions } from './strict-json/prepare.js'
import type { JsonObject } from './types.js'

/** {@link parseStrictJson}'s verdict; only input the fast path cannot prove waits for an import. */
export async function parseStrictJsonAsync(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): Promise<JsonObject> {
  return parseStrictJsonFast(input, options) ?? parseStrictJsonExact(input, options)
}

/** The fast path alone: the object when it can prove the text acceptable, else `undefined`. */
export function parseStrictJsonFast(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): JsonObject | undefined {
  return parseWith(input, options, fastParse)
}

export async function parseStrictJsonExact(
  input: string | Uint8Array,
  options?: StrictJsonOptions,
): Promise<JsonObject> {
  const { exactParse } = await import('./strict-json/parser.js')
  return parseWith(input, options, exactParse)
}
