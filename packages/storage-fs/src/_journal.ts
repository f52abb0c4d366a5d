/**
 * The data files and the batch journal, and what happens at open: interrupted temporary files
 * deleted, a committed batch finished, the keys of the files loaded.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { JsonValue, Storage } from '@agentmsg/core'
import { cloneJsonValue } from '@agentmsg/core/http'
import { eachLimited, removeFile } from './_durable.js'
import { fileName, keyFromName } from './_names.js'

/**
 * The contents of a data file: the key and its value, so a file can always be identified. The
 * value is checked to be exactly JSON first (the rules of every agentmsg adapter).
 */
export function entryText(key: string, value: unknown): string {
  return `[${JSON.stringify(key)},${JSON.stringify(cloneJsonValue(value))}]`
}

/** Parses what {@link entryText} wrote. */
export function parseEntry(text: string): [key: string, value: JsonValue] {
  const parsed = JSON.parse(text) as unknown
  if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'string') {
    throw new Error('storage-fs: malformed data file')
  }
  return parsed as [string, JsonValue]
}

export const JOURNAL = 'journal'
/** Files read or written at once (bounded open file descriptors). */
export const IO_PARALLELISM = 16

/** A write whose target state is known: the file contents for a put, `null` for a delete. */
export type Change = [key: string, content: string | null]

/** Deletes interrupted temporary files and finishes a committed batch, if any. */
export async function recover(dataDir: string, apply: (changes: Change[]) => Promise<void>) {
  const journalPath = join(dataDir, JOURNAL)
  const names = await readdir(dataDir)
  for (const name of names) {
    if (name.endsWith('.tmp')) await removeFile(join(dataDir, name))
  }
  if (!names.includes(JOURNAL)) return
  // A journal only ever appears by rename after its contents were fsynced, so an unreadable
  // one means the disk lost data; refuse rather than guess.
  let changes: Change[]
  try {
    const parsed = JSON.parse(await readFile(journalPath, 'utf8')) as Record<string, unknown>
    if (parsed.v !== 1 || !Array.isArray(parsed.changes)) throw new Error('unknown format')
    changes = parsed.changes as Change[]
  } catch (error) {
    throw new Error(`storage-fs: the batch journal ${journalPath} is unreadable`, { cause: error })
  }
  await apply(changes)
}

/** Fills `index` with the keys of the files in `dataDir`. */
export async function load(dataDir: string, index: Storage): Promise<void> {
  const keys: string[] = []
  const hashed: string[] = []
  for (const name of await readdir(dataDir)) {
    const key = keyFromName(name)
    if (key !== undefined) keys.push(key)
    else if (/^h[0-9a-f]{64}$/.test(name)) hashed.push(name)
  }
  // Long keys and keys with lone surrogates are named by hash; their key is inside the file.
  await eachLimited(hashed, IO_PARALLELISM, async (name) => {
    const [key] = parseEntry(await readFile(join(dataDir, name), 'utf8'))
    if (fileName(key) === name) keys.push(key)
  })
  await index.batch(keys.map((key) => ({ type: 'put', key, value: 0 })))
}
