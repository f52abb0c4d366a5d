/**
 * `@agentmsg/storage-fs`: a `Storage` in a directory (Node only): one file per key, crash-safe
 * writes, atomic batches through a journal, a directory lock, secrets in owner-only files.
 *
 * @packageDocumentation
 */
import { chmod, mkdir, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import {
  type AbortOptions,
  type JsonValue,
  memoryStorage,
  type Storage,
  type StorageListOptions,
  type StorageOp,
} from '@agentmsg/core'
import { eachLimited, removeFile, replaceFile, syncDir } from './_durable.js'
import {
  type Change,
  entryText,
  IO_PARALLELISM,
  JOURNAL,
  load,
  parseEntry,
  recover,
} from './_journal.js'
import { acquireLock, isCode, releaseLock } from './_lock.js'
import { fileName, privateKeyTest } from './_names.js'

/** Options for {@link fsStorage}. */
export interface FsStorageOptions {
  /** The directory to keep the store in. Created (mode 0700) if missing. */
  dir: string
  /**
   * Keys starting with one of these, or holding one after a `/` (under a `namespacedStorage`
   * prefix), are secrets: mode 0600 (fixed at open), others 0644. The client keeps its key
   * seeds under `keys/self/`, introduction tokens under `keys/secret/`.
   * @default DEFAULT_PRIVATE_PREFIXES
   */
  privatePrefixes?: string[]
}

/** The default {@link FsStorageOptions.privatePrefixes}. */
export const DEFAULT_PRIVATE_PREFIXES: readonly string[] = Object.freeze([
  'keys/self/',
  'keys/secret/',
  'identity/secret',
])

/**
 * Opens (creating it if needed) the store in `options.dir` and takes its lock: rejects while
 * another live process (or another open store in this one) holds it; a dead one's is taken
 * over. `close()` releases it. Every write is durable when its promise resolves, and a `batch`
 * is atomic across keys even if the machine dies halfway (a journal whose rename commits it,
 * replayed at open).
 *
 * @example
 * const storage = await fsStorage({ dir: '/var/lib/my-agent' })
 */
export async function fsStorage(options: FsStorageOptions): Promise<Storage> {
  if (typeof options?.dir !== 'string' || options.dir === '') {
    throw new TypeError('fsStorage: options.dir must be a non-empty string')
  }
  // `dir` holds `lock` (the holder's pid) and `data/`: one file per key (_names.ts), at most one
  // committed batch `journal`, and `*.tmp` files of interrupted writes (deleted at open).
  const dir = resolve(options.dir)
  const dataDir = join(dir, 'data')
  const journalPath = join(dataDir, JOURNAL)
  const lockPath = join(dir, 'lock')
  const privatePrefixes = [...(options.privatePrefixes ?? DEFAULT_PRIVATE_PREFIXES)]

  await mkdir(dir, { recursive: true, mode: 0o700 })
  await acquireLock(lockPath, dir)

  // The stored keys, in the order `list` gives them (values unused): kept in step with every
  // write, so `list` never reads the directory.
  const index = memoryStorage()
  const has = async (key: string) => (await index.get(key)) !== undefined
  const pathOf = (key: string): string => join(dataDir, fileName(key))
  const isPrivate = privateKeyTest(privatePrefixes)
  const modeOf = (key: string): number => (isPrivate(key) ? 0o600 : 0o644)

  const write = ([key, content]: Change) =>
    content === null ? removeFile(pathOf(key)) : replaceFile(pathOf(key), content, modeOf(key))

  /** Brings the files in line with a committed journal, then removes the journal. */
  const apply = async (changes: Change[]): Promise<void> => {
    await eachLimited(changes, IO_PARALLELISM, write)
    await syncDir(dataDir)
    // The journal may only go once the files it describes are durable; and its removal must be
    // durable before any later write, or a crash could resurrect it and replay stale values.
    await removeFile(journalPath)
    await syncDir(dataDir)
  }

  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    await recover(dataDir, apply)
    await load(dataDir, index)
    // Secrets written 0644 by an earlier version become 0600 (a seed is rarely rewritten).
    if (process.platform !== 'win32') {
      for (const [key] of await index.list('')) if (isPrivate(key)) await chmod(pathOf(key), 0o600)
    }
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
    if (!(await has(key))) return undefined
    const text = await readFile(pathOf(key), 'utf8').catch((error: unknown) => {
      if (isCode(error, 'ENOENT')) return undefined
      throw error
    })
    const [stored, value] = text === undefined ? [] : parseEntry(text)
    return stored === key ? value : undefined
  }

  const track = (changes: Change[]) =>
    index.batch(
      changes.map(([key, c]) =>
        c === null ? { type: 'delete', key } : { type: 'put', key, value: 0 },
      ),
    )

  const commit = async (changes: Change[]): Promise<void> => {
    if (changes.length === 0) return
    if (changes.length === 1) {
      // One file: its rename is atomic by itself, no journal needed.
      await write(changes[0] as Change)
      await syncDir(dataDir)
      return track(changes)
    }
    await replaceFile(journalPath, JSON.stringify({ v: 1, changes }), 0o600)
    await syncDir(dataDir) // the commit point: from here on the batch survives a crash
    await track(changes)
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
    async get(key, options) {
      checkCall(options, key)
      return run(options, () => read(key))
    },
    async put(key, value, options) {
      checkCall(options, key)
      const content = entryText(key, value)
      return run(options, () => commit([[key, content]]))
    },
    async delete(key, options) {
      checkCall(options, key)
      return run(options, async () => commit((await has(key)) ? [[key, null]] : []))
    },
    async batch(ops: StorageOp[], options?: AbortOptions) {
      options?.signal?.throwIfAborted()
      // Validate and serialize every op before touching anything, so a bad op late in the
      // batch leaves the store exactly as it was.
      const last = new Map<string, string | null>()
      if (!Array.isArray(ops)) throw new TypeError('storage batch: ops must be an array')
      ops.forEach((op, i) => {
        if (op === null || typeof op !== 'object') {
          throw new TypeError(`storage batch: op ${i} is not an object`)
        }
        checkCall(undefined, op.key, `op ${i}: `)
        // Only the last op on a key decides its final state.
        last.delete(op.key)
        if (op.type === 'put') last.set(op.key, entryText(op.key, op.value))
        else if (op.type === 'delete') last.set(op.key, null)
        else {
          throw new TypeError(
            `storage batch: op ${i} has unknown type ${String((op as StorageOp).type)}`,
          )
        }
      })
      return run(options, async () => {
        // Deleting a key that is not there changes nothing, so it need not be journalled.
        const changes: Change[] = []
        for (const [key, content] of last) {
          if (content !== null || (await has(key))) changes.push([key, content])
        }
        return commit(changes)
      })
    },
    async list(prefix: string, options: StorageListOptions = {}) {
      options.signal?.throwIfAborted()
      const { after, limit } = options
      return run(options, async () => {
        // The index checks the arguments, as every adapter does.
        const keys = (await index.list(prefix, { after, limit })).map(([key]) => key)
        const out = keys.map((key): [string, JsonValue | undefined] => [key, undefined])
        await eachLimited(out, IO_PARALLELISM, async (entry) => {
          entry[1] = await read(entry[0])
        })
        return out.filter((entry): entry is [string, JsonValue] => entry[1] !== undefined)
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

/** A call's synchronous checks (the signal's first); an async method turns them into rejections. */
function checkCall(o: AbortOptions | undefined, key: unknown, what = ''): asserts key is string {
  o?.signal?.throwIfAborted()
  if (typeof key !== 'string') throw new TypeError(`storage: ${what}key must be a string`)
}
