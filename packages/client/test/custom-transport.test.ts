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
import { utf8Encode } from '@agentmsg/core/http'
import { openSealedBody } from '@agentmsg/core/sealed-box'
import { AddressRefusedError } from '@agentmsg/core/server'
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

    // The peer answered 403: a refusal by the peer ends the send.
    const refusing = failing(
      'refusing',
      () => new AgentMsgError('forbidden', 'not you', { peerStatus: 403 }),
    )
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

  it("a custom transport's copies are sealed by default and reported with its target's route", async () => {
    // A third-party broker: the agent knows nothing of it but what its targets say.
    const sent: Array<{ message: Message; target: DeliveryTarget }> = []
    const broker = (target: Partial<DeliveryTarget>): TransportFactory => ({
      protocol: 'broker',
      create: () => ({
        protocol: 'broker',
        targets: ({ agent }) => [
          { kind: 'queue', agent, urls: ['https://broker.example'], route: 'relay', ...target },
        ],
        async send(message, t) {
          sent.push({ message, target: t })
          return { messageId: message.message_id, target: t, url: 'https://broker.example' }
        },
        async close() {},
      }),
    })
    const seed = crypto.getRandomValues(new Uint8Array(32))
    const bob = await agent({ identity: { seed }, transports: [], sendOnly: true })

    const viaBroker = await agent({ transports: [broker({})], sendOnly: true })
    expect(await viaBroker.send(bob.id, 'through the broker')).toEqual({
      messageId: expect.any(String),
      conversationId: expect.any(String),
      route: 'relay',
      transport: 'broker',
      relayUrl: 'https://broker.example',
      sealed: true,
    })
    const sealed = sent[0]!.message
    expect(sealed.body.parts).toEqual([
      expect.objectContaining({ type: 'sealed', recipient: bob.id }),
    ])
    expect(JSON.stringify(sealed)).not.toContain('through the broker')
    expect((await openSealedBody(sealed, { agent: bob.id, ed25519Seed: seed })).parts).toEqual([
      { type: 'text', text: 'through the broker' },
    ])

    const direct = await agent({ transports: [broker({ route: 'direct' })], sendOnly: true })
    expect(await direct.send(bob.id, 'direct, still sealed')).toMatchObject({
      route: 'direct',
      transport: 'broker',
      sealed: true,
    })
    expect((await direct.send(bob.id, 'x')).relayUrl).toBeUndefined()

    const declared = await agent({ transports: [broker({ confidential: true })], sendOnly: true })
    expect(await declared.send(bob.id, 'declared confidential')).toMatchObject({
      route: 'relay',
      sealed: false,
    })
    expect(sent.at(-1)!.message.body.parts).toEqual([
      { type: 'text', text: 'declared confidential' },
    ])
  })

  it('a refused inbox address fails over to the relays; a refusal by the peer ends the send', async () => {
    let inboxError: () => Error = () => new AddressRefusedError('10.0.0.1', 'bob.example')
    const tried: string[] = []
    const stand = (protocol: string, route: 'direct' | 'relay'): TransportFactory => ({
      protocol,
      create: () => ({
        protocol,
        targets: ({ agent }) => [
          {
            kind: protocol,
            agent,
            urls: [`https://${protocol}.example`],
            route,
            confidential: true,
          },
        ],
        async send(message, target) {
          tried.push(protocol)
          if (route === 'direct') throw inboxError()
          return { messageId: message.message_id, target, url: target.urls[0] }
        },
        async close() {},
      }),
    })
    // Listed relay first: direct targets are still tried first.
    const alice = await agent({
      transports: [stand('relayish', 'relay'), stand('inboxish', 'direct')],
    })
    const bob = await agent({ transports: [] })
    expect(await alice.send(bob.id, 'around a refused address')).toMatchObject({
      route: 'relay',
      transport: 'relayish',
      relayUrl: 'https://relayish.example',
    })
    expect(tried.splice(0)).toEqual(['inboxish', 'relayish'])

    inboxError = () => new AgentMsgError('forbidden', 'not you', { peerStatus: 403 })
    await expect(alice.send(bob.id, 'refused')).rejects.toMatchObject({
      code: 'forbidden',
      peerStatus: 403,
    })
    expect(tried).toEqual(['inboxish'])
  })

  it('sendOnly agents do not listen; no route is not_found', async () => {
    const hub = memoryHub()
    const quiet = await agent({ transports: [hub.factory], sendOnly: true })
    expect(hub.listening.has(quiet.id)).toBe(false)
    const alice = await agent({ transports: [hub.factory] })
    await expect(alice.send(quiet.id, 'anyone?')).rejects.toMatchObject({ code: 'not_found' })
  })
})
