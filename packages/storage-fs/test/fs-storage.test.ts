import { spawnSync } from 'node:child_process'
import { readdir, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { testStorage } from '@agentmsg/conformance'
import type { Storage } from '@agentmsg/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fsStorage } from '../src/index.js'
import { bundleSource, kill, startChild, tempDir } from './helpers.js'

const dirs: string[] = []
const dirOf = new WeakMap<Storage, string>()

async function open(dir?: string): Promise<Storage> {
  const where = dir ?? (await tempDir())
  if (dir === undefined) dirs.push(where)
  const storage = await fsStorage({ dir: where })
  dirOf.set(storage, where)
  return storage
}

afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

testStorage('fsStorage', () => open(), {
  persistent: {
    reopen: async (old) => {
      await old.close?.()
      return open(dirOf.get(old))
    },
  },
})

describe('fsStorage lock', () => {
  let bundle: string
  beforeAll(async () => {
    const dir = await tempDir()
    dirs.push(dir)
    bundle = await bundleSource(dir)
  })

  it('refuses a second open in this process until the first is closed', async () => {
    const first = await open()
    const dir = dirOf.get(first)!
    await expect(fsStorage({ dir })).rejects.toThrow(
      `directory ${dir} is locked by process ${process.pid}`,
    )
    await first.put('a', 1)
    await first.close?.()
    await expect(first.get('a')).rejects.toThrow(/closed/)
    const second = await open(dir)
    expect(await second.get('a')).toBe(1)
    await second.close?.()
  })

  it('is blocked by a child process holding the lock, and takes it over once the child dies', async () => {
    const dir = await tempDir()
    dirs.push(dir)
    const { child, waitFor } = startChild(bundle, ['hold', dir])
    try {
      await waitFor(/^ready$/)
      await expect(fsStorage({ dir })).rejects.toThrow(
        `directory ${dir} is locked by process ${child.pid}`,
      )
    } finally {
      await kill(child)
    }
    // SIGKILL skipped close(): the lock file still names the dead child, and is taken over.
    const storage = await open(dir)
    await storage.put('x', true)
    await storage.close?.()
  })

  it('takes over a stale lock left by a dead pid', async () => {
    const dir = await tempDir()
    dirs.push(dir)
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'])
    await writeFile(join(dir, 'lock'), `${dead.stdout.toString()}\n`)
    const storage = await open(dir)
    await storage.put('x', 1)
    await storage.close?.()
    // close() released the lock.
    expect(await readdir(dir)).not.toContain('lock')
  })
})

describe('fsStorage files', () => {
  it('creates the directory 0700 and private keys 0600', async () => {
    if (process.platform === 'win32') return
    const parent = await tempDir()
    dirs.push(parent)
    const dir = join(parent, 'nested', 'store')
    const storage = await fsStorage({ dir })
    await storage.put('keys/self/ed25519', { secret: 'x' })
    await storage.batch([
      { type: 'put', key: 'identity/secret', value: 's' },
      { type: 'put', key: 'contacts/bob', value: 'public' },
    ])
    const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777
    expect(await modeOf(dir)).toBe(0o700)
    expect(await modeOf(join(dir, 'data'))).toBe(0o700)
    const files = await readdir(join(dir, 'data'))
    const modes = new Map<string, number>()
    for (const name of files) modes.set(name, await modeOf(join(dir, 'data', name)))
    const { fileName } = await import('../src/_names.js')
    expect(modes.get(fileName('keys/self/ed25519'))).toBe(0o600)
    expect(modes.get(fileName('identity/secret'))).toBe(0o600)
    expect((modes.get(fileName('contacts/bob')) ?? 0) & 0o600).toBe(0o600)
    expect(modes.get(fileName('contacts/bob'))).not.toBe(0o600) // 0644 minus the umask
    await storage.close?.()
  })

  it('honours custom privatePrefixes', async () => {
    if (process.platform === 'win32') return
    const dir = await tempDir()
    dirs.push(dir)
    const storage = await fsStorage({ dir, privatePrefixes: ['vault/'] })
    await storage.put('vault/a', 1)
    await storage.put('keys/self/a', 1)
    const { fileName } = await import('../src/_names.js')
    expect((await stat(join(dir, 'data', fileName('vault/a')))).mode & 0o777).toBe(0o600)
    expect((await stat(join(dir, 'data', fileName('keys/self/a')))).mode & 0o777).not.toBe(0o600)
    await storage.close?.()
  })

  it('keeps keys apart that differ only in case, are long, traverse paths or hold lone surrogates', async () => {
    const storage = await open()
    const dir = dirOf.get(storage)!
    const keys = [
      'Key',
      'key',
      'KEY',
      '../../etc/passwd',
      '/abs',
      'a\\b',
      '.',
      '..',
      '',
      'x'.repeat(5000),
      `long/${'é'.repeat(300)}`,
      'lone \ud800 high',
      'lone \udc00 low',
      'pair \ud834\udd1e',
      'nul\u0000byte',
    ]
    for (const key of keys) await storage.put(key, key)
    await storage.batch(keys.map((key) => ({ type: 'put', key: `b/${key}`, value: key })))
    await storage.close?.()
    const reopened = await open(dir)
    const expected = [...keys, ...keys.map((key) => `b/${key}`)].sort()
    expect((await reopened.list('')).map(([k]) => k)).toEqual(expected)
    for (const key of keys) {
      expect(await reopened.get(key)).toBe(key)
      expect(await reopened.get(`b/${key}`)).toBe(key)
    }
    // Nothing escaped the data directory, and file names are lowercase ASCII.
    expect((await readdir(dir)).sort()).toEqual(['data', 'lock'])
    for (const name of await readdir(join(dir, 'data'))) expect(name).toMatch(/^[a-z0-9]+$/)
    await reopened.close?.()
  })

  it('writes hundreds of small puts per second', async () => {
    const storage = await open()
    const n = 300
    const started = performance.now()
    for (let i = 0; i < n; i++) await storage.put(`t/${i}`, { i })
    const putsPerSecond = n / ((performance.now() - started) / 1000)
    const batchStarted = performance.now()
    for (let i = 0; i < 100; i++) {
      await storage.batch(
        Array.from({ length: 10 }, (_, j) => ({ type: 'put' as const, key: `u/${j}`, value: i })),
      )
    }
    const batchesPerSecond = 100 / ((performance.now() - batchStarted) / 1000)
    console.log(
      `fsStorage: ${putsPerSecond.toFixed(0)} sequential puts/s, ` +
        `${batchesPerSecond.toFixed(0)} 10-key batches/s`,
    )
    expect(putsPerSecond).toBeGreaterThan(100)
    await storage.close?.()
  })
})
