/** Where the agent keeps its identity: `keys/self/identity`, read again on the next start. */
import { memoryStorage } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { createAgent } from '../src/index.js'

describe('storage layout', () => {
  it('keeps the identity under keys/self/', async () => {
    const storage = memoryStorage()
    const first = await createAgent({ storage, transports: [] })
    await first.close()
    expect(await storage.get('keys/self/identity')).toMatchObject({ agentId: first.id })
    const again = await createAgent({ storage, transports: [] })
    expect(again.id).toBe(first.id)
    await again.close()
  })

  it('identity.create: false opens an existing agent and refuses to make one', async () => {
    const storage = memoryStorage()
    await expect(
      createAgent({ storage, transports: [], identity: { create: false } }),
    ).rejects.toMatchObject({ code: 'not_found' })
    expect(await storage.list('')).toEqual([])
    const first = await createAgent({ storage, transports: [] })
    await first.close()
    const again = await createAgent({ storage, transports: [], identity: { create: false } })
    expect(again.id).toBe(first.id)
    await again.close()
  })
})
