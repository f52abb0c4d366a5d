/**
 * The relay client against the real relay (packages/relay) over HTTPS on 127.0.0.1: publish →
 * retrieve → ack, SSE and WebSocket streams that survive a relay restart with no loss and no
 * duplicate, tampered messages caught by the receive pipeline after delivery, and failover.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { type DeliveryOutcome, type Message, validateMessage } from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { createReceiver, verifyMessage } from '@agentmsg/core/receive'
import { memoryRelayStore, type RelayStore } from '@agentmsg/relay'
import { describe, expect, it } from 'vitest'
import { pipelineHandler } from '../src/client/mailbox-listener.js'
import { createRelayClient, publishToRelay } from '../src/index.js'
import { cleanups, clientFor, net, setupRelayTests, startRelay, until } from './client-fixtures.js'

setupRelayTests()

/** A store that flips the text of chosen messages when they are read back (a lying relay). */
function tamperingStore(inner: RelayStore, marker: string): RelayStore {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'retrieve') {
        return async (...args: Parameters<RelayStore['retrieve']>) => {
          const page = await target.retrieve(...args)
          return {
            ...page,
            entries: page.entries.map((e) =>
              e.json.includes(marker) ? { ...e, json: e.json.replace(marker, `${marker}!`) } : e,
            ),
          }
        }
      }
      const value = Reflect.get(target, prop, receiver) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

describe('relay client against the relay', () => {
  it('publishes, retrieves the messages as delivered, acknowledges them', async () => {
    const { relay } = await startRelay()
    cleanups.push(() => relay.close())
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const bobClient = clientFor(bob, relay.url)
    const { subscriptionId } = await bobClient.subscribe()
    expect(subscriptionId).toEqual(expect.any(String))

    const m1 = await signedMessage(alice, bob.id, { text: 'one' })
    const m2 = await signedMessage(alice, bob.id, { text: 'two' })
    const aliceClient = clientFor(alice, relay.url)
    expect(await aliceClient.publish(m1)).toEqual({ messageId: m1.message_id })
    expect(await aliceClient.publish(m2)).toEqual({ messageId: m2.message_id })

    const page = await bobClient.retrieve()
    const held = page.messages.map((v) => validateMessage(v).message)
    expect(held.map((m) => m.message_id)).toEqual([m1.message_id, m2.message_id])
    // The relay appended its trace entry; the signature still verifies (trace is unsigned).
    expect(held[0]!.trace?.received[0]?.by).toBe(`relay:${relay.url}`)
    const verified = await verifyMessage(held[0]!, createKeyResolver())
    expect(verified.keyId).toBe(alice.signer.keyId)
    expect(page.cursor).toEqual(expect.any(String))

    const next = await bobClient.retrieve({ after: page.cursor })
    expect(next.messages).toEqual([])

    await bobClient.ack(m1.message_id, alice.id)
    await bobClient.ack(m2.message_id, alice.id)
    expect((await bobClient.retrieve()).messages).toEqual([])
    await expect(bobClient.ack(m1.message_id, alice.id)).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    })

    // Errors carry the relay's code: a mailbox that was never opened → 404.
    const carol = await fixtureAgent()
    await expect(
      aliceClient.publish(await signedMessage(alice, carol.id, { text: 'x' })),
    ).rejects.toMatchObject({
      code: 'not_found',
    })
    // Another agent's mailbox → 403 forbidden (agent auth binds the agent).
    const mallory = createRelayClient({
      relayUrl: relay.url,
      agent: bob.id,
      signer: alice.signer,
      fetch: net.fetch,
    })
    await expect(mallory.retrieve()).rejects.toMatchObject({ code: 'forbidden' })

    await bobClient.unsubscribe(subscriptionId)
    await expect(
      aliceClient.publish(await signedMessage(alice, bob.id, { text: 'late' })),
    ).rejects.toMatchObject({
      code: 'not_found',
    })
  })

  for (const mode of ['sse', 'ws'] as const) {
    it(`${mode}: resumes across a relay restart with no loss and no duplicate`, async () => {
      let { relay, dataDir } = await startRelay()
      const port = relay.port
      cleanups.push(() => relay.close())
      const alice = await fixtureAgent()
      const bob = await fixtureAgent()
      const bobClient = clientFor(bob, relay.url)
      await bobClient.subscribe()
      const aliceClient = clientFor(alice, relay.url)
      const sent: Message[] = []
      for (const text of ['m1', 'm2', 'm3']) {
        const m = await signedMessage(alice, bob.id, { text: text })
        await aliceClient.publish(m)
        sent.push(m)
      }

      const handled: string[] = []
      const errors: unknown[] = []
      let restarted = false
      const handle = bobClient.stream(
        async ({ value }) => {
          const id = (value as Message).message_id
          handled.push(id)
          if (id === sent[1]!.message_id && !restarted) {
            restarted = true
            // The relay goes down under the open stream and comes back on the same port and
            // data directory; this handler finishes afterwards, so its ack reaches the new one.
            await relay.close()
            relay = (await startRelay({ port, dataDir })).relay
          }
        },
        { mode, onError: (e) => errors.push(e), backoff: { baseMs: 50, capMs: 200 } },
      )
      cleanups.push(() => handle.close())

      await until(() => restarted && handled.length >= 3)
      for (const text of ['m4', 'm5']) {
        const m = await signedMessage(alice, bob.id, { text: text })
        await aliceClient.publish(m)
        sent.push(m)
      }
      await until(() => handled.length >= 5)
      await new Promise((r) => setTimeout(r, 300))
      expect(handled).toEqual(sent.map((m) => m.message_id))
      // m4 and m5 were published to the restarted relay: they came over a new connection.
      expect(errors.filter((e) => !(e instanceof Error))).toEqual([])
      await handle.close()
      await expect(handle.done).resolves.toBeUndefined()
      expect(handle.cursor).toEqual(expect.any(String))
      // Everything was acknowledged.
      expect((await bobClient.retrieve()).messages).toEqual([])
    })
  }

  for (const mode of ['sse', 'ws', 'retrieve'] as const) {
    it(`${mode}: a message tampered with in the relay is refused by the pipeline and acknowledged`, async () => {
      const store = memoryRelayStore()
      const { relay } = await startRelay({ store: tamperingStore(store, 'TAMPER-ME') })
      cleanups.push(() => relay.close())
      const alice = await fixtureAgent()
      const bob = await fixtureAgent()
      const bobClient = clientFor(bob, relay.url)
      await bobClient.subscribe()
      const good1 = await signedMessage(alice, bob.id, { text: 'fine' })
      const bad = await signedMessage(alice, bob.id, { text: 'TAMPER-ME' })
      const good2 = await signedMessage(alice, bob.id, { text: 'also fine' })
      for (const m of [good1, bad, good2]) await bobClient.publish(m)

      // The agent's one receive pipeline: it verifies what the relay handed over.
      const delivered: string[] = []
      const outcomes: DeliveryOutcome[] = []
      const receiver = createReceiver({
        agentId: bob.id,
        resolver: createKeyResolver(),
        onMessage: async (m) => void delivered.push(m.message_id),
        onError: () => {},
      })
      cleanups.push(() => receiver.close())
      const receive: typeof receiver.receive = async (d) => {
        const outcome = await receiver.receive(d)
        outcomes.push(outcome)
        return outcome
      }
      if (mode === 'retrieve') {
        const page = await bobClient.retrieve()
        for (const value of page.messages) {
          const outcome = await receive({ body: value, transport: 'relay' })
          if (outcome.status === 'refused' && outcome.retry) continue
          const m = value as Message
          await bobClient.ack(m.message_id, m.from.agent)
        }
      } else {
        const handle = bobClient.stream(pipelineHandler(receive), { mode })
        cleanups.push(() => handle.close())
        await until(() => outcomes.length === 3 && delivered.length === 2)
        await handle.close()
      }
      await until(() => delivered.length === 2)
      expect(delivered).toEqual([good1.message_id, good2.message_id])
      const refused = outcomes.filter((o) => o.status === 'refused')
      expect(refused).toHaveLength(1)
      expect(refused[0]).toMatchObject({ error: { code: 'invalid_signature' }, retry: false })
      // Refused for good: acknowledged like the others (PROFILE §9), so nothing is held.
      expect(await store.usage(bob.id)).toMatchObject({ messages: 0 })
    })
  }

  it('fails over from a dead relay to a live one', async () => {
    const { relay } = await startRelay()
    cleanups.push(() => relay.close())
    const { relay: dead } = await startRelay()
    const deadUrl = dead.url
    await dead.close() // nothing listens on this port any more
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const bobClient = clientFor(bob, relay.url)
    await bobClient.subscribe()

    const m = await signedMessage(alice, bob.id, { text: 'failover' })
    const result = await publishToRelay(m, [deadUrl, relay.url], { fetch: net.fetch })
    expect(result.relayUrl).toBe(relay.url)
    expect(result.messageId).toBe(m.message_id)
    expect(result.failed.map((f) => f.relayUrl)).toEqual([deadUrl])
  })
})
