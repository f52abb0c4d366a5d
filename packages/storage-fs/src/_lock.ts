import { open, readFile, stat, unlink } from 'node:fs/promises'

/**
 * Takes the directory lock: `path` created exclusively (`O_CREAT|O_EXCL`, flag `wx`) holding our
 * pid. A lock whose pid is no longer alive is stale and taken over; a live one throws.
 */
export async function acquireLock(path: string, dir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600)
      try {
        await handle.writeFile(`${process.pid}\n`)
      } finally {
        await handle.close()
      }
      return
    } catch (error) {
      if (!isCode(error, 'EEXIST') || attempt >= 50) throw error
    }
    const holder = await readHolder(path)
    if (holder === 'gone') continue
    if (holder === 'unknown') {
      // Empty or unreadable: another process may be between creating the file and writing its
      // pid. Give it a moment; a file still empty after that was left by a crash.
      const stats = await stat(path).catch(() => undefined)
      if (stats && Date.now() - stats.mtimeMs < 2000) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        continue
      }
    } else if (isAlive(holder)) {
      throw new Error(`storage-fs: directory ${dir} is locked by process ${holder}`)
    }
    // Stale: the holder died without close(). Remove it and try the exclusive create again.
    await unlink(path).catch((error: unknown) => {
      if (!isCode(error, 'ENOENT')) throw error
    })
  }
}

/** Removes the lock if it is still ours. */
export async function releaseLock(path: string): Promise<void> {
  if ((await readHolder(path)) === process.pid) await unlink(path).catch(() => {})
}

async function readHolder(path: string): Promise<number | 'gone' | 'unknown'> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    return isCode(error, 'ENOENT') ? 'gone' : 'unknown'
  }
  const pid = Number(text.trim())
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 'unknown'
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return isCode(error, 'EPERM')
  }
}

export function isCode(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === code
}
