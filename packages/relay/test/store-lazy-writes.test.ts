/**
 * Issue 12's store changes: lazy acknowledgements (a WebSocket ack frame rides with the next
 * commit instead of committing alone) and pages that say they read everything due (a feed then
 * skips its second, empty read).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RELAY_STORE_NOW as NOW, publishInput } from '@agentmsg/conformance'
import { afterAll, describe, expect, it } from 'vitest'
import { memoryRelayStore } from '../src/store/memory.js'
import { type SqliteCommitInfo, sqliteRelayStore } from '../src/store/sqlite.js'
import type { RelayStore } from '../src/store/types.js'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function sqlite(onCommit?: (info: SqliteCommitInfo) => void): RelayStore {
  const dir = mkdtempSync(join(tmpdir(), 'relay-lazy-'))
  dirs.push(dir)
  return sqliteRelayStore({ path: join(dir, 'relay.db'), ...(onCommit ? { onCommit } : {}) })
}

const page = { limit: 100, maxBytes: 8 * 1024 * 1024, now: NOW }

describe('lazy acknowledgements (SQLite group commit)', () => {
  it('a lazy ack goes with the next publish, in the same COMMIT', async () => {
    const commits: number[] = []
    const store = sqlite((info) => commits.push(info.size))
    try {
      const first = publishInput(['alice'])
      await store.publish(first)
      commits.length = 0
      const acked = store.ack('alice', first.messageId, first.from, { lazy: true })
      const second = store.publish(publishInput(['alice']))
      expect(await acked).toBe(1)
      await second
      expect(commits).toEqual([2])
    } finally {
      await store.close()
    }
  })

  it('a lazy ack alone is committed all the same', async () => {
    const store = sqlite()
    try {
      const m = publishInput(['alice'])
      await store.publish(m)
      expect(await store.ack('alice', m.messageId, m.from, { lazy: true })).toBe(1)
      expect((await store.retrieve('alice', page)).entries).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('settled() covers a lazy ack: the next retrieve no longer sees the entry', async () => {
    const store = sqlite()
    try {
      const m = publishInput(['alice'])
      await store.publish(m)
      const acked = store.ack('alice', m.messageId, m.from, { lazy: true })
      await store.settled?.()
      expect((await store.retrieve('alice', page)).entries).toEqual([])
      expect(await acked).toBe(1)
    } finally {
      await store.close()
    }
  })

  it('close() commits a lazy ack still waiting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'relay-lazy-'))
    dirs.push(dir)
    const path = join(dir, 'relay.db')
    const store = sqliteRelayStore({ path })
    const m = publishInput(['alice'])
    await store.publish(m)
    const acked = store.ack('alice', m.messageId, m.from, { lazy: true })
    await store.close()
    expect(await acked).toBe(1)
    const reopened = sqliteRelayStore({ path })
    try {
      expect((await reopened.retrieve('alice', page)).entries).toEqual([])
    } finally {
      await reopened.close()
    }
  })
})

describe.each([
  ['memory', () => memoryRelayStore()],
  ['sqlite', () => sqlite()],
])('retrieve: complete pages (%s)', (_name, make) => {
  it('says complete only when neither limit nor bytes cut the page', async () => {
    const store = make()
    try {
      const inputs = [1, 2, 3].map(() => publishInput(['alice']))
      for (const input of inputs) await store.publish(input)
      expect((await store.retrieve('alice', page)).complete).toBe(true)
      expect((await store.retrieve('alice', { ...page, limit: 3 })).complete).toBeUndefined()
      expect((await store.retrieve('alice', { ...page, limit: 2 })).complete).toBeUndefined()
      const bytes = inputs[0]!.json.length
      const cut = await store.retrieve('alice', { ...page, maxBytes: bytes + 1 })
      expect(cut.entries).toHaveLength(1)
      expect(cut.complete).toBeUndefined()
      const rest = await store.retrieve('alice', { ...page, after: cut.cursor })
      expect(rest.entries).toHaveLength(2)
      expect(rest.complete).toBe(true)
      expect((await store.retrieve('alice', { ...page, after: rest.cursor })).complete).toBe(
        undefined,
      )
    } finally {
      await store.close()
    }
  })
})
