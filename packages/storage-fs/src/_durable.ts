import { open, rename, rm } from 'node:fs/promises'
import { isCode } from './_lock.js'

/**
 * Writes `data` to `path` so that after a crash it holds its old contents or all of `data`
 * (`path.tmp`, fsync, rename); the caller's {@link syncDir} makes the rename durable.
 */
export async function replaceFile(path: string, data: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp`
  let handle
  try {
    handle = await open(tmp, 'wx', mode)
  } catch (error) {
    // Left by an earlier failed write: its mode may differ, so start from a fresh file.
    if (!isCode(error, 'EEXIST')) throw error
    await rm(tmp, { force: true })
    handle = await open(tmp, 'wx', mode)
  }
  try {
    await handle.writeFile(data)
    await handle.datasync()
  } finally {
    await handle.close()
  }
  await rename(tmp, path)
}

/** fsync a directory, making the renames, creations and unlinks in it durable. */
export async function syncDir(dir: string): Promise<void> {
  // Windows cannot open a directory for fsync; its filesystems journal metadata anyway.
  if (process.platform === 'win32') return
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Removes `path` if it exists. */
export const removeFile = (path: string): Promise<void> => rm(path, { force: true })

/** Runs `task` over `items`, at most `limit` at a time (bounded open file descriptors). */
export async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      await task(items[i] as T, i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}
