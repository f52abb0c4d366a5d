/**
 * Attack (issue 9, item 13): reading secrets through files left readable by others. Key seeds
 * (`keys/self/…`) and introduction tokens (`keys/secret/…`) are written 0600 wherever they sit,
 * also under a `namespacedStorage` prefix, and files written 0644 by an earlier version are
 * made 0600 when the store opens. The agent end to end (createAgent + introduce) is in
 * packages/client/test/attack-secret-mode.test.ts.
 */
import { chmod, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { namespacedStorage } from '@agentmsg/core'
import { afterAll, describe, expect, it } from 'vitest'
import { fileName } from '../src/_names.js'
import { fsStorage } from '../src/index.js'
import { tempDir } from './helpers.js'

const dirs: string[] = []
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

const modeOf = async (path: string) => (await stat(path)).mode & 0o777

describe('attack: secret files readable by others', () => {
  it('secret keys are 0600 at the top level and under any namespace; others are not', async () => {
    const dir = await tempDir()
    dirs.push(dir)
    const storage = await fsStorage({ dir })
    await storage.put('keys/self/identity', { seeds: { k1: 'seed' } })
    await storage.put('keys/secret/intro-AAAAAAAAAAAAAAAA', 'token')
    const alice = namespacedStorage(storage, 'agents/alice/')
    await alice.put('keys/self/identity', { seeds: { k1: 'seed' } })
    await alice.batch([
      { type: 'put', key: 'keys/secret/intro-BBBBBBBBBBBBBBBB', value: 'token' },
      { type: 'put', key: 'conv/bob/c1', value: { peer: 'bob', next: 1 } },
    ])
    await namespacedStorage(alice, 'https/').put('keys/secret/intro-C', 'token')
    await storage.put('peers/bob', { relays: [] })
    const data = join(dir, 'data')
    for (const key of [
      'keys/self/identity',
      'keys/secret/intro-AAAAAAAAAAAAAAAA',
      'agents/alice/keys/self/identity',
      'agents/alice/keys/secret/intro-BBBBBBBBBBBBBBBB',
      'agents/alice/https/keys/secret/intro-C',
    ]) {
      expect(await modeOf(join(data, fileName(key))), key).toBe(0o600)
    }
    for (const key of ['agents/alice/conv/bob/c1', 'peers/bob']) {
      expect(await modeOf(join(data, fileName(key))), key).not.toBe(0o600)
    }
    // Nothing else was written (no journal or temporary file left).
    expect((await readdir(data)).length).toBe(7)
    await storage.close?.()
  })

  it('a secret file left 0644 by an earlier version is 0600 after the store opens', async () => {
    const dir = await tempDir()
    dirs.push(dir)
    let storage = await fsStorage({ dir })
    await storage.put('agents/bob/keys/self/identity', { seeds: { k1: 'seed' } })
    await storage.put('keys/secret/intro-DDDDDDDDDDDDDDDD', 'token')
    await storage.close?.()
    const files = ['agents/bob/keys/self/identity', 'keys/secret/intro-DDDDDDDDDDDDDDDD'].map(
      (key) => join(dir, 'data', fileName(key)),
    )
    for (const file of files) await chmod(file, 0o644)
    storage = await fsStorage({ dir })
    for (const file of files) expect(await modeOf(file)).toBe(0o600)
    await storage.close?.()
  })
})
