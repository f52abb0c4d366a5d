/**
 * A transport written only against core's interfaces, passed with `createAgent({ transports })`:
 * the agent routes through its `targets()`, sends with it, hands its `listen` the one receive
 * pipeline, gives it its own storage namespace, and falls back past a target that fails for
 * now (PROFILE §6 retryable: 5xx, 429, network) or locally, but not past a refusal by the peer.
 */
import {
  AgentMsgError,
  type DeliveryHandler,
  type DeliveryTarget,
  type Message,
  memoryStorage,
  type Transport,
  type TransportFactory,
} from '@agentmsg/core'
import { utf8Encode } from '@agentmsg/core/encoding'
import { afterEach, describe, expect, it } from 'vitest'
import { type Agent, type AgentOptions, createAgent } from '../src/index.js'
import { collect } from './collect.js'

/** An in-process hub: agents that listen on it are reachable by id. */
function memoryHub(protocol = 'memory') {
  const listening = new Map<string, DeliveryHandler>()
  const sent: Array<{ from: string; to: string; id: string }> = []
  const factory: TransportFactory = {
    protocol,
    async create(components) {
      await components.storage.put('created', components.agentId)
      let mine: DeliveryHandler | undefined
      const transport: Transport = {
        protocol,
        async targets({ agent }) {
          // In-process: only the peer can read what it is handed.
          const target = { kind: protocol, agent, urls: [], route: 'direct', confidential: true }
          return listening.has(agent) ? [target as DeliveryTarget] : []
        },
        async send(message: Message, target: DeliveryTarget) {
          const receive = listening.get(target.agent)
          if (!receive) throw new AgentMsgError('unavailable', `${target.agent} is not listening`)
          sent.push({ from: message.from.agent, to: target.agent, id: message.message_id })
          // Bytes, as on a wire: the receiver parses them strictly.
          const outcome = await receive({
            body: utf8Encode(JSON.stringify(message)),
            transport: protocol,
          })
          if (outcome.status === 'refused') throw outcome.error
          return { messageId: outcome.messageId, target }
        },
        async listen(receive) {
          mine = receive
          listening.set(components.agentId, receive)
        },
        async close() {
          if (listening.get(components.agentId) === mine) listening.delete(components.agentId)
        },
      }
      return transport
    },
  }
  return { factory, sent, listening }
}

/** A transport that knows every agent and always fails with `error`. */
function failing(protocol: string, error: () => Error) {
  const tried: string[] = []
  const factory: TransportFactory = {
    protocol,
    create: () => ({
      protocol,
      targets: ({ agent }) => [{ kind: protocol, agent, urls: [], route: 'direct' }],
      async send(message) {
        tried.push(message.message_id)
        throw error()
      },
      async close() {},
    }),
  }
  return { factory, tried }
}

const open: Agent[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
})

async function agent(options: AgentOptions): Promise<Agent> {
  const a = await createAgent({ storage: memoryStorage(), ...options })
  open.push(a)
  return a
}

describe('a custom transport', () => {
  it('carries a conversation both ways (send, listen, route)', async () => {
    const hub = memoryHub()
    const aliceStorage = memoryStorage()
    const alice = await agent({ transports: [hub.factory], storage: aliceStorage })
    const bob = await agent({ transports: [hub.factory] })
    const atBob = collect(bob, 'message')
    const atAlice = collect(alice, 'message')
    const delivered = collect(alice, 'delivered')

    const sent = await alice.send(bob.id, 'hello over memory')
    expect(sent).toMatchObject({ route: 'direct', transport: 'memory' })
    expect(sent.pending).toBeUndefined()
    expect(await delivered.nth(1)).toMatchObject({ messageId: sent.messageId, to: bob.id })
    const m1 = await atBob.nth(1)
    expect(m1).toMatchObject({
      text: 'hello over memory',
      from: alice.id,
      transport: 'memory',
      level: 3,
      source: 'did-key',
      conversationId: sent.conversationId,
    })
    expect(m1.message.sequence).toBe(0)

    const replied = await bob.reply(m1, 'hello alice')
    expect(replied.transport).toBe('memory')
    const m2 = await atAlice.nth(1)
    expect(m2.message).toMatchObject({ sequence: 1, phase: 'response' })
    expect(hub.sent.map((s) => s.id)).toEqual([sent.messageId, replied.messageId])

    // The transport's storage is its own namespace of the agent's.
    expect(await aliceStorage.get('memory/created')).toBe(alice.id)
  })

  it('the same message delivered twice reaches the application once', async () => {
    const hub = memoryHub()
    const alice = await agent({ transports: [hub.factory] })
    const bob = await agent({ transports: [hub.factory] })
    const atBob = collect(bob, 'message')
    await alice.send(bob.id, 'once')
    const m = await atBob.nth(1)
    const outcome = await hub.listening.get(bob.id)!({
      body: utf8Encode(JSON.stringify(m.message)),
      transport: 'memory',
    })
    expect(outcome.status).toBe('duplicate')
    await alice.send(bob.id, 'twice', { conversationId: m.conversationId })
    expect((await atBob.nth(2)).text).toBe('twice')
    expect(atBob.seen).toHaveLength(2)
  })

  it('falls back to the next target after a retryable failure, not after a refusal', async () => {
    const hub = memoryHub()
    const down = failing('down', () => new AgentMsgError('unavailable', 'try later'))
    const alice = await agent({ transports: [down.factory, hub.factory] })
    const bob = await agent({ transports: [hub.factory] })
    const atBob = collect(bob, 'message')
    const sent = await alice.send(bob.id, 'around the outage')
    expect(sent.transport).toBe('memory')
    expect(down.tried).toEqual([sent.messageId])
    expect((await atBob.nth(1)).text).toBe('around the outage')

    const refusing = failing('refusing', () => new AgentMsgError('forbidden', 'not you'))
    const carol = await agent({ transports: [refusing.factory, hub.factory] })
    await expect(carol.send(bob.id, 'refused')).rejects.toMatchObject({ code: 'forbidden' })
    expect(refusing.tried).toHaveLength(1)
    expect(atBob.seen).toHaveLength(1)
  })

  it('a message accepted while nobody listened is handed over after a restart', async () => {
    const hub = memoryHub()
    const bobStorage = memoryStorage()
    const alice = await agent({ transports: [hub.factory] })
    let bob = await agent({ transports: [hub.factory], storage: bobStorage })
    const bobId = bob.id
    // Accepted (persisted) by Bob's receiver; his application has no listener yet.
    const sent = await alice.send(bobId, 'kept for later')
    expect(sent.pending).toBeUndefined()
    await bob.close()
    open.splice(open.indexOf(bob), 1)

    bob = await agent({ transports: [hub.factory], storage: bobStorage })
    expect(bob.id).toBe(bobId)
    const atBob = collect(bob, 'message')
    expect(await atBob.nth(1)).toMatchObject({ text: 'kept for later', transport: 'memory' })
    expect((await atBob.nth(1)).message.message_id).toBe(sent.messageId)
  })

  it('sendOnly agents do not listen; no route is not_found', async () => {
    const hub = memoryHub()
    const quiet = await agent({ transports: [hub.factory], sendOnly: true })
    expect(hub.listening.has(quiet.id)).toBe(false)
    const alice = await agent({ transports: [hub.factory] })
    await expect(alice.send(quiet.id, 'anyone?')).rejects.toMatchObject({ code: 'not_found' })
  })
})
