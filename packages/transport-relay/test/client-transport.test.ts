/**
 * relayTransport as a core Transport against the real relay over HTTPS on 127.0.0.1: send with
 * failover, listen into a real receive pipeline (subscription and cursor kept in storage, acks
 * per outcome), and a relay that is down reported, retried, and never failing `listen`; a relay
 * whose address is refused is failed over like one that is down.
 */
import { type FixtureAgent, fixtureAgent, signedMessage } from '@agentmsg/conformance'
import {
  AgentMsgError,
  type DeliveryHandler,
  type DeliveryOutcome,
  generateKeyPair,
  type Message,
  memoryStorage,
  type Storage,
  type TransportComponents,
} from '@agentmsg/core'
import { createIdentityDocument, createKeyResolver } from '@agentmsg/core/identity'
import { createReceiver } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { mailboxKeys } from '../src/client/mailbox-listener.js'
import { type RelayTransport, relayTransport } from '../src/client/relay-transport.js'
import { publishToRelay } from '../src/index.js'
import { cleanups, clientFor, net, setupRelayTests, startRelay, until } from './client-fixtures.js'

setupRelayTests()

const fast = { baseMs: 20, capMs: 100 }

function components(agent: FixtureAgent, relays: string[], storage: Storage = memoryStorage()) {
  const errors: unknown[] = []
  const c: TransportComponents = {
    agentId: agent.id,
    signer: agent.signer,
    resolver: createKeyResolver(),
    storage,
    relays,
    trusts: () => false,
    identityDocument: () => undefined,
    now: () => Date.now(),
    onError: (e) => void errors.push(e),
  }
  return { c, errors, storage }
}

function transport(c: TransportComponents, mode: 'sse' | 'ws' = 'sse'): RelayTransport {
  const t = relayTransport({
    mode,
    fetch: net.fetch,
    streamFetch: net.streamFetch,
    WebSocket: net.WebSocket,
    backoff: fast,
  }).create(c)
  cleanups.push(() => t.close())
  return t
}

/** The agent's receive pipeline, recording what reached the application. */
function pipeline(agent: FixtureAgent) {
  const delivered: Message[] = []
  const receiver = createReceiver({
    agentId: agent.id,
    resolver: createKeyResolver(),
    onMessage: async (m) => void delivered.push(m),
    onError: () => {},
  })
  cleanups.push(() => receiver.close())
  return { receive: receiver.receive, delivered }
}

const target = (agent: FixtureAgent, urls: string[]) => ({
  kind: 'relay',
  agent: agent.id,
  urls,
  route: 'relay' as const,
})

describe('relayTransport', () => {
  it('is a TransportFactory for relay targets; send fails over and names the relay that took it', async () => {
    const { relay } = await startRelay()
    cleanups.push(() => relay.close())
    const { relay: dead } = await startRelay()
    const deadUrl = dead.url
    await dead.close()
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await clientFor(bob, relay.url).subscribe()

    const factory = relayTransport({ fetch: net.fetch })
    expect(factory.protocol).toBe('relay')
    const t = transport(components(alice, []).c)
    expect(t.protocol).toBe('relay')
    const m = await signedMessage(alice, bob.id, { text: 'via failover' })
    const to = target(bob, [deadUrl, relay.url])
    expect(await t.send(m, to)).toEqual({ messageId: m.message_id, target: to, url: relay.url })
    // A 4xx other than 429 stops: carol has no mailbox there.
    const carol = await fixtureAgent()
    await expect(
      t.send(
        await signedMessage(alice, carol.id, { text: 'x' }),
        target(carol, [relay.url, deadUrl]),
      ),
    ).rejects.toMatchObject({ code: 'not_found' })
    await expect(
      t.send(m, {
        kind: 'inbox',
        agent: bob.id,
        urls: ['https://bob.example/inbox'],
        route: 'direct',
      }),
    ).rejects.toMatchObject({ code: 'invalid_format' })
    await expect(t.send(m, target(bob, []))).rejects.toMatchObject({ code: 'invalid_format' })
  })

  it('a relay whose address is refused is skipped, and the next one takes the message', async () => {
    const { relay } = await startRelay()
    cleanups.push(() => relay.close())
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    await clientFor(bob, relay.url).subscribe()
    // 10.0.0.1 is not public unicast (PROFILE §4): the address policy refuses it before dialling.
    const refused = 'https://10.0.0.1'
    const m = await signedMessage(alice, bob.id, { text: 'past a refused address' })
    const result = await publishToRelay(m, [refused, relay.url], { fetch: net.fetch })
    expect(result.relayUrl).toBe(relay.url)
    expect(result.failed).toEqual([{ relayUrl: refused, error: expect.any(AgentMsgError) }])
    expect(result.failed[0]!.error).toMatchObject({ code: 'forbidden', peerStatus: undefined })
    const t = transport(components(alice, []).c)
    const again = await signedMessage(alice, bob.id, { text: 'through the transport' })
    const to = target(bob, [refused, relay.url])
    expect(await t.send(again, to)).toEqual({
      messageId: again.message_id,
      target: to,
      url: relay.url,
    })
    expect((await clientFor(bob, relay.url).retrieve()).messages).toHaveLength(2)
  })

  it("targets: the peer's relays, then its document's, in its preference; confidential when all trusted", async () => {
    const alice = await fixtureAgent()
    const side = components(alice, [])
    const trusted = new Set(['https://r1.example', 'https://r2.example'])
    const t = transport({ ...side.c, trusts: (url) => trusted.has(url) })
    const { publicKey } = await generateKeyPair()
    const doc = (relays: string[], relayPreference?: 'any' | 'ordered') =>
      createIdentityDocument({
        agentId: 'https://bob.example',
        publicKey,
        relays,
        ...(relayPreference ? { relayPreference } : {}),
      })
    const agent = 'https://bob.example'
    expect(t.targets({ agent, relays: [] })).toEqual([])
    expect(t.targets({ agent, relays: [], document: doc([]) })).toEqual([])
    expect(t.targets({ agent, relays: ['https://r1.example'] })).toEqual([
      {
        kind: 'relay',
        agent,
        urls: ['https://r1.example'],
        route: 'relay',
        preference: 'ordered',
        confidential: true,
        durable: true,
      },
    ])
    const both = t.targets({
      agent,
      relays: ['https://r2.example', 'https://r1.example'],
      document: doc(['https://r1.example', 'https://r3.example'], 'ordered'),
    })
    expect(both).toMatchObject([
      {
        urls: ['https://r2.example', 'https://r1.example', 'https://r3.example'],
        preference: 'ordered',
        confidential: false,
      },
    ])
    const anyDoc = t.targets({ agent, relays: [], document: doc(['https://r2.example']) })
    expect(anyDoc).toMatchObject([{ urls: ['https://r2.example'], preference: 'any' }])
    // A document without a `relay` member: its preference is the default, `any`.
    const bare = t.targets({ agent, relays: ['https://r1.example'], document: doc([]) })
    expect(bare).toMatchObject([{ urls: ['https://r1.example'], preference: 'any' }])
  })

  for (const mode of ['sse', 'ws'] as const) {
    it(`${mode}: listen opens the mailbox once, streams into the pipeline, acks, keeps the cursor`, async () => {
      const { relay } = await startRelay()
      cleanups.push(() => relay.close())
      const alice = await fixtureAgent()
      const bob = await fixtureAgent()
      const bobSide = components(bob, [relay.url])
      const bobT = transport(bobSide.c, mode)
      const { receive, delivered } = pipeline(bob)
      await bobT.listen(receive)
      const keys = mailboxKeys(relay.url)
      const subscription = await bobSide.storage.get(keys.subscription)
      expect(subscription).toEqual(expect.any(String))

      const aliceT = transport(components(alice, []).c)
      const sent = [
        await signedMessage(alice, bob.id, { text: 'one' }),
        await signedMessage(alice, bob.id, { text: 'two' }),
      ]
      for (const m of sent) await aliceT.send(m, target(bob, [relay.url]))
      await until(() => delivered.length === 2)
      expect(delivered.map((m) => m.message_id)).toEqual(sent.map((m) => m.message_id))
      expect(bobSide.errors).toEqual([])
      await bobT.close()
      expect(await bobSide.storage.get(keys.cursor)).toEqual(expect.any(String))
      expect((await clientFor(bob, relay.url).retrieve()).messages).toEqual([])

      // A later run on the same storage reuses the subscription and resumes from the cursor.
      const third = await signedMessage(alice, bob.id, { text: 'three' })
      await aliceT.send(third, target(bob, [relay.url]))
      const again = pipeline(bob)
      await transport(bobSide.c, mode).listen(again.receive)
      await until(() => again.delivered.length === 1)
      expect(again.delivered[0]!.message_id).toBe(third.message_id)
      expect(await bobSide.storage.get(keys.subscription)).toBe(subscription)
    })
  }

  it('acknowledges per outcome: refused for now comes again, refused for good does not', async () => {
    const { relay } = await startRelay()
    cleanups.push(() => relay.close())
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const [later, bad] = [
      await signedMessage(alice, bob.id, { text: 'later' }),
      await signedMessage(alice, bob.id, { text: 'bad' }),
    ]
    const calls: string[] = []
    const receive: DeliveryHandler = async (d): Promise<DeliveryOutcome> => {
      const id = (d.body as Message).message_id
      calls.push(id)
      if (id === bad.message_id) {
        return {
          status: 'refused',
          error: new AgentMsgError('invalid_signature', 'no'),
          retry: false,
        }
      }
      if (calls.filter((c) => c === id).length === 1) {
        return { status: 'refused', error: new AgentMsgError('unavailable', 'busy'), retry: true }
      }
      return { status: 'accepted', messageId: id }
    }
    const bobSide = components(bob, [relay.url])
    const bobT = transport(bobSide.c)
    await bobT.listen(receive)
    const aliceT = transport(components(alice, []).c)
    await aliceT.send(later, target(bob, [relay.url]))
    await aliceT.send(bad, target(bob, [relay.url]))
    await until(() => calls.length === 3)
    await bobT.close()
    expect(calls).toEqual([later.message_id, later.message_id, bad.message_id])
    expect(bobSide.errors).toContainEqual(expect.objectContaining({ code: 'unavailable' }))
    expect((await clientFor(bob, relay.url).retrieve()).messages).toEqual([])
  })

  it('a relay that is down does not fail listen: reported, retried, and used once it is up', async () => {
    const { relay: live } = await startRelay()
    cleanups.push(() => live.close())
    const { relay: down, dataDir } = await startRelay()
    const { port, url: downUrl } = down
    await down.close()
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const bobSide = components(bob, [downUrl, live.url])
    const bobT = transport(bobSide.c)
    const { receive, delivered } = pipeline(bob)
    await bobT.listen(receive) // resolves although the first relay is unreachable
    expect(bobSide.errors[0]).toMatchObject({ code: 'unavailable' })
    expect(await bobSide.storage.get(mailboxKeys(downUrl).subscription)).toBeUndefined()

    const aliceT = transport(components(alice, []).c)
    const m1 = await signedMessage(alice, bob.id, { text: 'via the live relay' })
    await aliceT.send(m1, target(bob, [downUrl, live.url]))
    await until(() => delivered.length === 1)

    // The relay comes back: the listener opens the mailbox there and streams it.
    const { relay: back } = await startRelay({ port, dataDir })
    cleanups.push(() => back.close())
    const m2 = await signedMessage(alice, bob.id, { text: 'via the relay that came back' })
    const sendWhenOpen = async () => {
      for (;;) {
        if ((await bobSide.storage.get(mailboxKeys(downUrl).subscription)) !== undefined) break
        await new Promise((r) => setTimeout(r, 20))
      }
      return aliceT.send(m2, target(bob, [back.url]))
    }
    expect(await sendWhenOpen()).toMatchObject({ url: back.url })
    await until(() => delivered.length === 2)
    expect(delivered.map((m) => m.message_id)).toEqual([m1.message_id, m2.message_id])
  })
})
