/**
 * The example memory transport (src/examples/memory-transport.ts) passes the Transport
 * contract, and does what its comments say about the hub.
 */

import {
  createMemoryHub,
  fixtureAgent,
  memoryTransport,
  signedMessage,
  testTransport,
} from '@agentmsg/conformance'
import { type DeliveryHandler, memoryStorage } from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { describe, expect, it } from 'vitest'

testTransport('memoryTransport', {
  factory: memoryTransport(createMemoryHub()),
  delivery: 'direct',
})

async function open(hub = createMemoryHub()) {
  const agent = await fixtureAgent()
  const transport = await memoryTransport(hub).create({
    agentId: agent.id,
    signer: agent.signer,
    resolver: createKeyResolver(),
    storage: memoryStorage(),
    relays: [],
    trusts: () => false,
    identityDocument: () => undefined,
    now: () => Date.now(),
    onError: (error) => {
      throw error
    },
  })
  return { hub, agent, transport }
}

describe('memoryTransport', () => {
  it('finds a confidential direct target only for agents listening on the same hub', async () => {
    const alice = await open()
    const bob = await open(alice.hub)
    const elsewhere = await open()
    const bobRoute = { agent: bob.agent.id, relays: [] }
    expect(await alice.transport.targets!(bobRoute)).toEqual([])
    await bob.transport.listen!(async () => ({ status: 'accepted', messageId: 'x' }))
    expect(await alice.transport.targets!(bobRoute)).toEqual([
      { kind: 'memory', agent: bob.agent.id, urls: [], route: 'direct', confidential: true },
    ])
    expect(await elsewhere.transport.targets!(bobRoute)).toEqual([])
    await bob.transport.close()
    expect(await alice.transport.targets!(bobRoute)).toEqual([])
  })

  it('hands over the message as JSON bytes and leaves the hub when the signal aborts', async () => {
    const alice = await open()
    const bob = await open(alice.hub)
    const bodies: unknown[] = []
    const receive: DeliveryHandler = async (delivery) => {
      bodies.push(delivery.body)
      return { status: 'accepted', messageId: 'echoed-id' }
    }
    const controller = new AbortController()
    await bob.transport.listen!(receive, { signal: controller.signal })
    const message = await signedMessage(alice.agent, bob.agent.id)
    const target = { kind: 'memory', agent: bob.agent.id, urls: [], route: 'direct' as const }
    // The receipt carries the id the receiver echoed.
    expect(await alice.transport.send(message, target)).toEqual({ messageId: 'echoed-id', target })
    expect(bodies).toHaveLength(1)
    expect(bodies[0]).toBeInstanceOf(Uint8Array)
    expect(JSON.parse(new TextDecoder().decode(bodies[0] as Uint8Array))).toEqual(message)
    controller.abort()
    expect(alice.hub.agents.has(bob.agent.id)).toBe(false)
    await expect(alice.transport.send(message, target)).rejects.toMatchObject({
      code: 'unavailable',
    })
  })

  it('a second transport of the same agent takes its place; closing the first keeps it', async () => {
    const first = await open()
    const second = await memoryTransport(first.hub).create({
      agentId: first.agent.id,
    } as Parameters<ReturnType<typeof memoryTransport>['create']>[0])
    await first.transport.listen!(async () => ({ status: 'accepted', messageId: '1' }))
    const receive: DeliveryHandler = async () => ({ status: 'accepted', messageId: '2' })
    await second.listen!(receive)
    await first.transport.close()
    expect(first.hub.agents.get(first.agent.id)).toBe(receive)
  })
})
