/**
 * @agentmsg/storage-fs — a {@link Storage} in a directory (Node only): one file per key, crash-safe
 * atomic writes, atomic multi-key batches through a write-ahead journal, an exclusive directory
 * lock, and private keys in files only their owner can read.
 *
 * @packageDocumentation
 */
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type {
  AbortOptions,
  JsonValue,
  Storage,
  StorageListOptions,
  StorageOp,
} from '@agentmsg/core'
import { eachLimited, removeFile, replaceFile, syncDir } from './_durable.js'
import { entryText, jsonText, parseEntry } from './_json.js'
import { KeyIndex } from './_key-index.js'
import { acquireLock, isCode, releaseLock } from './_lock.js'
import { fileName, keyFromName } from './_names.js'
import { privateKeyTest, restrictPrivateFiles } from './_private.js'

/** Options for {@link fsStorage}. */
export interface FsStorageOptions {
  /** The directory to keep the store in. Created (mode 0700) if missing. */
  dir: string
  /**
   * Keys starting with one of these, or holding one right after a `/` (the same keys under a
   * `namespacedStorage` prefix), are secrets: their files have mode 0600, also files written
   * 0644 by an earlier version (fixed at open). Other keys are 0644; the directory is 0700
   * either way. The agentmsg client keeps its key seeds under `keys/self/` and introduction
   * tokens under `keys/secret/`.
   * @default ['keys/self/', 'keys/secret/', 'identity/secret']
   */
  privatePrefixes?: string[]
}

/** The default {@link FsStorageOptions.privatePrefixes}. */
export const DEFAULT_PRIVATE_PREFIXES: readonly string[] = Object.freeze([
  'keys/self/',
  'keys/secret/',
  'identity/secret',
])

// Layout of `dir`: `lock` (the holder's pid) and `data/`, which holds one file per key
// (`k<base32>` or `h<sha256>`, see _names.ts), at most one committed batch `journal`, and
// `*.tmp` files from interrupted writes (deleted at open).
const JOURNAL = 'journal'
const IO_PARALLELISM = 16

/** A write whose target state is known: the file contents for a put, `null` for a delete. */
type Change = [key: string, content: string | null]

/**
 * Opens (creating it if needed) the store in `options.dir` and takes its lock. Rejects with
 * `directory <dir> is locked by process <pid>` while another live process (or another open
 * store in this one) holds it; a lock left by a dead process is taken over. Call `close()` to
 * release the lock.
 *
 * Every `put`/`delete`/`batch` is durable when its promise resolves, and a `batch` is atomic
 * across keys even if the process or machine dies halfway: the batch is first written to a
 * journal whose rename is the commit point, and a committed journal is replayed at open.
 *
 * @example
 * const storage = await fsStorage({ dir: '/var/lib/my-agent' })
 * await storage.batch([
 *   { type: 'put', key: 'contacts/bob', value: { pinned: true } },
 *   { type: 'delete', key: 'contacts/eve' },
 * ])
 * await storage.close?.()
 */
export async function fsStorage(options: FsStorageOptions): Promise<Storage> {
  if (typeof options?.dir !== 'string' || options.dir === '') {
    throw new TypeError('fsStorage: options.dir must be a non-empty string')
  }
  const dir = resolve(options.dir)
  const dataDir = join(dir, 'data')
  const journalPath = join(dataDir, JOURNAL)
  const lockPath = join(dir, 'lock')
  const privatePrefixes = [...(options.privatePrefixes ?? DEFAULT_PRIVATE_PREFIXES)]

  await mkdir(dir, { recursive: true, mode: 0o700 })
  await acquireLock(lockPath, dir)

  const index = new KeyIndex()
  const pathOf = (key: string): string => join(dataDir, fileName(key))
  const isPrivate = privateKeyTest(privatePrefixes)
  const modeOf = (key: string): number => (isPrivate(key) ? 0o600 : 0o644)

  /** Brings the files in line with a committed journal, then removes the journal. */
  const apply = async (changes: Change[]): Promise<void> => {
    await eachLimited(changes, IO_PARALLELISM, async ([key, content]) => {
      if (content === null) await removeFile(pathOf(key))
      else await replaceFile(pathOf(key), content, modeOf(key))
    })
    await syncDir(dataDir)
    // The journal may only go once the files it describes are durable; and its removal must be
    // durable before any later write, or a crash could resurrect it and replay stale values.
    await removeFile(journalPath)
    await syncDir(dataDir)
  }

  try {
    await mkdir(dataDir, { mode: 0o700 }).catch((error: unknown) => {
      if (!isCode(error, 'EEXIST')) throw error
    })
    await recover(dataDir, journalPath, apply)
    await load(dataDir, index)
    await restrictPrivateFiles(index.range('', undefined, Infinity), isPrivate, pathOf)
  } catch (error) {
    await releaseLock(lockPath)
    throw error
  }

  // Every operation runs alone, in call order: a reader never sees half a batch, and a batch's
  // journal is gone before the next write starts.
  let tail: Promise<unknown> = Promise.resolve()
  let closed = false
  let broken: Error | undefined
  const run = <T>(options: AbortOptions | undefined, task: () => Promise<T>): Promise<T> => {
    const result = tail.then(async () => {
      options?.signal?.throwIfAborted()
      if (closed) throw new Error(`storage-fs: ${dir} is closed`)
      if (broken) throw broken
      return task()
    })
    tail = result.catch(() => {})
    return result
  }

  const read = async (key: string): Promise<JsonValue | undefined> => {
    if (!index.has(key)) return undefined
    let text: string
    try {
      text = await readFile(pathOf(key), 'utf8')
    } catch (error) {
      if (isCode(error, 'ENOENT')) return undefined
      throw error
    }
    const [stored, value] = parseEntry(text)
    return stored === key ? value : undefined
  }

  const commit = async (changes: Change[]): Promise<void> => {
    if (changes.length === 0) return
    if (changes.length === 1) {
      // One file: its rename is atomic by itself, no journal needed.
      const [key, content] = changes[0] as Change
      if (content === null) {
        if (!(await removeFile(pathOf(key)))) return
        index.remove(key)
      } else {
        await replaceFile(pathOf(key), content, modeOf(key))
        index.add(key)
      }
      await syncDir(dataDir)
      return
    }
    await replaceFile(journalPath, JSON.stringify({ v: 1, changes }), 0o600)
    await syncDir(dataDir) // the commit point: from here on the batch survives a crash
    for (const [key, content] of changes) {
      if (content === null) index.remove(key)
      else index.add(key)
    }
    try {
      await apply(changes)
    } catch (error) {
      // The batch is committed but only partly applied; reopening replays the journal.
      broken = new Error(
        `storage-fs: a committed batch could not be applied in ${dir}; reopen the store to recover`,
        { cause: error },
      )
      throw broken
    }
  }

  return {
    name: 'fs',

    get(key, options) {
      return guard(options, () => {
        checkKey(key)
        return run(options, () => read(key))
      })
    },

    put(key, value, options) {
      return guard(options, () => {
        checkKey(key)
        const content = entryText(key, jsonText(value))
        return run(options, () => commit([[key, content]]))
      })
    },

    delete(key, options) {
      return guard(options, () => {
        checkKey(key)
        return run(options, () => commit(index.has(key) ? [[key, null]] : []))
      })
    },

    batch(ops: StorageOp[], options?: AbortOptions) {
      return guard(options, () => {
        // Validate and serialize every op before touching anything, so a bad op late in the
        // batch leaves the store exactly as it was.
        const last = new Map<string, string | null>()
        if (!Array.isArray(ops)) throw new TypeError('storage batch: ops must be an array')
        ops.forEach((op, i) => {
          if (op === null || typeof op !== 'object') {
            throw new TypeError(`storage batch: op ${i} is not an object`)
          }
          checkKey(op.key, `op ${i}: `)
          // Only the last op on a key decides its final state.
          last.delete(op.key)
          if (op.type === 'put') last.set(op.key, entryText(op.key, jsonText(op.value)))
          else if (op.type === 'delete') last.set(op.key, null)
          else {
            throw new TypeError(
              `storage batch: op ${i} has unknown type ${String((op as StorageOp).type)}`,
            )
          }
        })
        return run(options, () =>
          // Deleting a key that is not there changes nothing, so it need not be journalled.
          commit([...last].filter(([key, content]) => content !== null || index.has(key))),
        )
      })
    },

    list(prefix: string, options: StorageListOptions = {}) {
      return guard(options, () => {
        checkKey(prefix, 'prefix: ')
        const { after, limit } = options
        if (after !== undefined) checkKey(after, 'after: ')
        if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
          throw new TypeError(`storage list: limit must be a non-negative integer, got ${limit}`)
        }
        return run(options, async () => {
          const keys = index.range(prefix, after, limit ?? Infinity)
          const values = new Array<JsonValue | undefined>(keys.length)
          await eachLimited(keys, IO_PARALLELISM, async (key, i) => {
            values[i] = await read(key)
          })
          const out: Array<[string, JsonValue]> = []
          keys.forEach((key, i) => {
            const value = values[i]
            if (value !== undefined) out.push([key, value])
          })
          return out
        })
      })
    },

    close() {
      if (closed) return Promise.resolve()
      const done = tail.then(async () => {
        if (closed) return
        closed = true
        await releaseLock(lockPath)
      })
      tail = done.catch(() => {})
      return done
    },
  }
}

/** Runs the synchronous checks of a method so that their errors become rejections. */
function guard<T>(options: AbortOptions | undefined, body: () => Promise<T>): Promise<T> {
  try {
    // Throws `signal.reason`, as the AbortOptions contract says.
    options?.signal?.throwIfAborted()
    return body()
  } catch (error) {
    return Promise.reject(error)
  }
}

function checkKey(key: unknown, what = ''): asserts key is string {
  if (typeof key !== 'string') throw new TypeError(`storage: ${what}key must be a string`)
}

/** Deletes interrupted temporary files and finishes a committed batch, if any. */
async function recover(
  dataDir: string,
  journalPath: string,
  apply: (changes: Change[]) => Promise<void>,
): Promise<void> {
  const names = await readdir(dataDir)
  for (const name of names) {
    if (name.endsWith('.tmp')) await removeFile(join(dataDir, name))
  }
  if (!names.includes(JOURNAL)) return
  // A journal only ever appears by rename after its contents were fsynced, so an unreadable
  // one means the disk lost data; refuse rather than guess.
  let changes: Change[]
  try {
    const parsed = JSON.parse(await readFile(journalPath, 'utf8')) as {
      v?: unknown
      changes?: unknown
    }
    if (parsed.v !== 1 || !Array.isArray(parsed.changes)) throw new Error('unknown format')
    changes = parsed.changes as Change[]
  } catch (error) {
    throw new Error(`storage-fs: the batch journal ${journalPath} is unreadable`, { cause: error })
  }
  await apply(changes)
}

/** Fills `index` with the keys of the files in `dataDir`. */
async function load(dataDir: string, index: KeyIndex): Promise<void> {
  const hashed: string[] = []
  for (const name of await readdir(dataDir)) {
    const key = keyFromName(name)
    if (key !== undefined) index.add(key)
    else if (/^h[0-9a-f]{64}$/.test(name)) hashed.push(name)
  }
  // Long keys and keys with lone surrogates are named by hash; their key is inside the file.
  await eachLimited(hashed, IO_PARALLELISM, async (name) => {
    const [key] = parseEntry(await readFile(join(dataDir, name), 'utf8'))
    if (fileName(key) === name) index.add(key)
  })
}
