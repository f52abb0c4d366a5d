/**
 * Storage written by earlier versions keeps working: the https sender's outbox (`outbox/…`)
 * moves into the https transport's namespace; relay cursors and subscriptions were already
 * under `relay/` and stay; identity, conversations and peers keep their keys.
 */
import { memoryStorage } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { migrateStorage } from '../src/agent/migrate.js'
import { createAgent, STORAGE_KEYS } from '../src/index.js'

describe('storage layout', () => {
  it('moves a legacy outbox into the https namespace, leaves the rest', async () => {
    const storage = memoryStorage()
    await storage.put('outbox/01ABC/m', { message: 'm' })
    await storage.put('outbox/01ABC/s', { attempts: 1 })
    await storage.put('relay/cursor/https%3A%2F%2Frelay.example', 'c-1')
    await storage.put('conv/c1', { peer: 'did:key:z', next: 3 })
    await migrateStorage(storage)
    expect(await storage.list('outbox/')).toEqual([])
    expect(await storage.list(STORAGE_KEYS.outbox)).toEqual([
      ['https/outbox/01ABC/m', { message: 'm' }],
      ['https/outbox/01ABC/s', { attempts: 1 }],
    ])
    expect(await storage.get(`${STORAGE_KEYS.cursors}https%3A%2F%2Frelay.example`)).toBe('c-1')
    expect(await storage.get(`${STORAGE_KEYS.conversations}c1`)).toEqual({
      peer: 'did:key:z',
      next: 3,
    })
    await migrateStorage(storage) // idempotent
    expect(await storage.list(STORAGE_KEYS.outbox)).toHaveLength(2)
  })

  it('keeps the identity under keys/self/', async () => {
    const storage = memoryStorage()
    const first = await createAgent({ storage, transports: [] })
    await first.close()
    expect(await storage.get(STORAGE_KEYS.self)).toMatchObject({ agentId: first.id })
    const again = await createAgent({ storage, transports: [] })
    expect(again.id).toBe(first.id)
    await again.close()
  })
})
