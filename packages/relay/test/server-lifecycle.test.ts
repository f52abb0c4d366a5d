/** serveRelay's graceful close (the `agentmsg relay` command: packages/cli/test/relay-command.test.ts). */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { memoryRelayStore } from '../src/store/memory.js'
import type { PublishInput, RelayStore, StorePublishResult } from '../src/store/types.js'
import { startRelay } from './helpers.js'

describe('graceful close', () => {
  it('lets a publish in flight be stored and answered 202 before closing', async () => {
    const inner = memoryRelayStore()
    let entered!: () => void
    const inPublish = new Promise<void>((resolve) => (entered = resolve))
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const store: RelayStore = Object.create(inner) as RelayStore
    store.publish = async (input: PublishInput): Promise<StorePublishResult[]> => {
      entered()
      await gate
      return inner.publish(input)
    }
    const r = await startRelay({ store })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await r.client.subscribe(bob)
    const msg = await signedMessage(alice, bob.id)
    const pending = r.client.publish(msg)
    await inPublish
    let stopped = false
    const stopping = r.stop().then(() => (stopped = true))
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(stopped).toBe(false)
    release()
    const res = await pending
    expect(res.status).toBe(202)
    await stopping
    expect(inner.storedMessages()).toBe(1)
    expect(r.errors).toEqual([])
  })
})
