import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * Published test vectors, copied unchanged into `test/vectors` with their provenance
 * (test/vectors/README.md: source, licence, how each file was obtained).
 */
export const VECTORS_DIR = fileURLToPath(new URL('../../../test/vectors/', import.meta.url))

/** Read a vector file as text. */
export function readVectorText(name: string): string {
  return readFileSync(VECTORS_DIR + name, 'utf8')
}

/** Read and parse a JSON vector file. */
export function readVectorJson<T = unknown>(name: string): T {
  return JSON.parse(readVectorText(name)) as T
}
