/**
 * Attack: another local user reads an agent's secrets from its storage
 * directory. After `createAgent` and `introduce` on fsStorage — at the top level and under a
 * namespacedStorage prefix — every file holding the key seed or the introduction token is 0600.
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { createIntroductionToken, namespacedStorage, type Storage } from '@agentmsg/core'
import { fsStorage } from '@agentmsg/storage-fs'
import { afterAll, describe, expect, it } from 'vitest'
import { createAgent } from '../src/index.js'
import { removeTempDirs, tempDir } from './helpers.js'

afterAll(removeTempDirs)

/** Every file under `dir/data` whose text contains one of `secrets`, with its mode. */
async function filesHolding(dir: string, secrets: string[]) {
  const data = join(dir, 'data')
  const out: Array<{ name: string; mode: number; holds: string[] }> = []
  for (const name of await readdir(data)) {
    const text = await readFile(join(data, name), 'utf8')
    const holds = secrets.filter((s) => text.includes(s))
    if (holds.length > 0)
      out.push({ name, mode: (await stat(join(data, name))).mode & 0o777, holds })
  }
  return out
}

describe('attack: secrets readable by other local users', () => {
  for (const prefix of [undefined, 'agents/alice/']) {
    it(`seed and introduction token files are 0600 (${prefix ? `namespaced ${prefix}` : 'top level'})`, async () => {
      const dir = await tempDir()
      const base = await fsStorage({ dir })
      const storage: Storage = prefix ? namespacedStorage(base, prefix) : base
      const agent = await createAgent({ storage, transports: [] })
      const token = createIntroductionToken()
      await agent.introduce(token)
      const named = createIntroductionToken()
      await agent.introduce(named, { agent: 'https://bob.example' })
      await agent.close()
      const self = (await storage.get('keys/self/identity')) as { seeds: Record<string, string> }
      const seeds = Object.values(self.seeds)
      expect(seeds).toHaveLength(1)
      await base.close?.()

      const found = await filesHolding(dir, [...seeds, token, named])
      // The seed and both tokens were found, each in one file.
      expect(found.flatMap((f) => f.holds).sort()).toEqual([...seeds, token, named].sort())
      for (const f of found) expect(f.mode, f.name).toBe(0o600)
    })
  }
})
