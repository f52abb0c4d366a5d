import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * Published test vectors live beside the repository, at `../shared/vectors` from its root
 * (never copied into the repo). Tests read them from there.
 */
export const VECTORS_DIR = fileURLToPath(new URL('../../../../shared/vectors/', import.meta.url))

/** Read a vector file as text. */
export function readVectorText(name: string): string {
  return readFileSync(VECTORS_DIR + name, 'utf8')
}

/** Read and parse a JSON vector file. */
export function readVectorJson<T = unknown>(name: string): T {
  return JSON.parse(readVectorText(name)) as T
}
