import { testStorage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { memoryStorage } from '../src/storage/memory.js'
import { namespacedStorage } from '../src/storage/namespace.js'

testStorage('memoryStorage', () => memoryStorage())
testStorage("namespacedStorage(memoryStorage(), 'ns/')", () =>
  namespacedStorage(memoryStorage(), 'ns/'),
)

describe('memoryStorage', () => {
  it('is named memory', () => {
    expect(memoryStorage().name).toBe('memory')
  })

  it('lists a page quickly among 100k keys', async () => {
    const storage = memoryStorage()
    const ops = Array.from({ length: 100_000 }, (_, i) => ({
      type: 'put' as const,
      key: `k/${String(99_999 - i).padStart(6, '0')}`,
      value: i,
    }))
    await storage.batch(ops)
    const started = performance.now()
    for (let i = 0; i < 1000; i++) {
      const page = await storage.list('k/', {
        after: `k/${String(i * 50).padStart(6, '0')}`,
        limit: 10,
      })
      expect(page).toHaveLength(10)
    }
    // 1000 paged lists must not each sort or scan 100k keys.
    expect(performance.now() - started).toBeLessThan(1000)
    const first = await storage.list('k/', { limit: 2 })
    expect(first).toEqual([
      ['k/000000', 99_999],
      ['k/000001', 99_998],
    ])
  })

  it('refuses a non-string key', async () => {
    const storage = memoryStorage()
    await expect(storage.put(42 as unknown as string, 1)).rejects.toThrow(TypeError)
    await expect(storage.list('', { limit: -1 })).rejects.toThrow(TypeError)
  })
})

describe('namespacedStorage', () => {
  it('keeps namespaces apart in one underlying store', async () => {
    const base = memoryStorage()
    const a = namespacedStorage(base, 'a/')
    const ab = namespacedStorage(base, 'ab/')
    await a.put('x', 1)
    await ab.put('x', 2)
    await base.put('a', 'outside')
    await base.put('a0', 'outside')
    expect(await a.get('x')).toBe(1)
    expect(await ab.get('x')).toBe(2)
    expect(await a.list('')).toEqual([['x', 1]])
    expect(await ab.list('')).toEqual([['x', 2]])
    expect(await base.list('')).toEqual([
      ['a', 'outside'],
      ['a/x', 1],
      ['a0', 'outside'],
      ['ab/x', 2],
    ])
    await a.batch([{ type: 'delete', key: 'x' }])
    expect(await ab.get('x')).toBe(2)
    expect(await base.get('a/x')).toBeUndefined()
  })

  it('nests', async () => {
    const base = memoryStorage()
    const inner = namespacedStorage(namespacedStorage(base, 'outer/'), 'inner/')
    await inner.put('k', true)
    expect(await base.list('')).toEqual([['outer/inner/k', true]])
    expect(await inner.list('', { after: '' })).toEqual([['k', true]])
  })

  it('requires a prefix ending in /', () => {
    expect(() => namespacedStorage(memoryStorage(), 'ns')).toThrow(TypeError)
    expect(() => namespacedStorage(memoryStorage(), '')).toThrow(TypeError)
  })

  it('does not close the shared storage', () => {
    expect(namespacedStorage(memoryStorage(), 'ns/').close).toBeUndefined()
  })
})
