/**
 * Attack (issue 9 item 5, PROFILE §9 envelopes): a message nested exactly 64 deep is legal, but
 * a retrieve page wraps it two levels deeper and a WebSocket frame one; a client that parses
 * the envelope as one document refuses the whole page or frame and retries the same cursor
 * forever. Entries that are garbage (written into the relay's store behind its back) must not
 * stop the ones behind them either: each is skipped by its cursor and acknowledged when it can
 * be named. Against a real relay on 127.0.0.1, over SSE, WebSocket and retrieve.
 */
import { type FixtureAgent, fixtureAgent, signedMessage } from '@agentmsg/conformance'
import {
  type DeliveryOutcome,
  type Message,
  memoryStorage,
  type TransportComponents,
} from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { createReceiver, parseStrictJson } from '@agentmsg/core/receive'
import { type MemoryRelayStore, memoryRelayStore } from '@agentmsg/relay'
import { describe, expect, it } from 'vitest'
import { pipelineHandler } from '../src/client/mailbox-listener.js'
import { relayTransport } from '../src/client/relay-transport.js'
import { cleanups, clientFor, net, setupRelayTests, startRelay, until } from './client-fixtures.js'

setupRelayTests()

type JsonObject = ReturnType<typeof parseStrictJson>

/** An object `levels` deep: `{}` is 1, `{a:{}}` is 2. */
const nest = (levels: number): JsonObject => (levels <= 1 ? {} : { a: nest(levels - 1) })

/** A mailbox holding legal mail (one 64 deep) with garbage rows in between. */
async function poisonedMailbox() {
  const store = memoryRelayStore()
  const { relay } = await startRelay({ store })
  cleanups.push(() => relay.close())
  const alice = await fixtureAgent()
  const bob = await fixtureAgent()
  await clientFor(bob, relay.url).subscribe()
  const send = async (text: string, extensions?: JsonObject) => {
    const m = await signedMessage(alice, bob.id, { text, ...(extensions ? { extensions } : {}) })
    await clientFor(alice, relay.url).publish(m)
    return m
  }
  const first = await send('first')
  // The message is 1, x_deep's value 2 … its innermost object 64: exactly the limit (PROFILE §1).
  const deep = await send('deep', { x_deep: nest(63) })
  expect(() => parseStrictJson(JSON.stringify(deep))).not.toThrow()
  // Garbage the relay would never store, written into the store directly.
  const sample = await signedMessage(alice, bob.id, { text: 'garbage' })
  // Duplicate member names (refused by PROFILE §1; JSON.parse keeps the last, the real id).
  const duplicate = `{"message_id":"dup-member",${JSON.stringify(sample).slice(1)}`
  const tooDeep = JSON.stringify({ ...sample, message_id: 'too-deep', x_deep: nest(64) })
  expect(() => parseStrictJson(tooDeep)).toThrow(/deeper than 64/)
  const broken = `{"message_id":"broken","from":{"agent":${JSON.stringify(alice.id)}},"body":[[`
  // A legal message whose integer field a relay rewrote as `0.0` (same value, same signature).
  const decimal = await signedMessage(alice, bob.id, { text: 'decimal' })
  const rewritten = JSON.stringify(decimal).replace('"sequence":0', '"sequence":0.0')
  expect(rewritten).toContain('"sequence":0.0')
  await inject(store, bob, alice, sample.message_id, duplicate)
  const second = await send('second')
  await inject(store, bob, alice, 'too-deep', tooDeep)
  await inject(store, bob, alice, 'broken', broken)
  await inject(store, bob, alice, decimal.message_id, rewritten)
  const third = await send('third')
  return { store, relay, alice, bob, legal: [first, deep, second, third] }
}

async function inject(
  store: MemoryRelayStore,
  bob: FixtureAgent,
  alice: FixtureAgent,
  messageId: string,
  json: string,
) {
  const now = Date.now()
  await store.publish({
    mailboxes: [bob.id],
    from: alice.id,
    messageId,
    json,
    bytes: new TextEncoder().encode(json).byteLength,
    receivedAt: now,
    expiresAt: now + 3_600_000,
  })
}

/** Bob's one receive pipeline, recording what reached the application and every outcome. */
function pipeline(bob: FixtureAgent) {
  const delivered: Message[] = []
  const outcomes: DeliveryOutcome[] = []
  const receiver = createReceiver({
    agentId: bob.id,
    resolver: createKeyResolver(),
    onMessage: async (m) => void delivered.push(m),
    onError: () => {},
  })
  cleanups.push(() => receiver.close())
  const receive: typeof receiver.receive = async (d) => {
    const outcome = await receiver.receive(d)
    outcomes.push(outcome)
    return outcome
  }
  return { receive, delivered, outcomes }
}

describe('attack: a 64-deep message and garbage entries in a mailbox', () => {
  for (const mode of ['sse', 'ws'] as const) {
    it(`${mode}: relayTransport receives every legal message; garbage is skipped and acknowledged`, async () => {
      const { store, relay, bob, legal } = await poisonedMailbox()
      const errors: unknown[] = []
      const c: TransportComponents = {
        agentId: bob.id,
        signer: bob.signer,
        resolver: createKeyResolver(),
        storage: memoryStorage(),
        relays: [relay.url],
        trusts: () => false,
        identityDocument: () => undefined,
        now: () => Date.now(),
        onError: (e) => void errors.push(e),
      }
      const t = relayTransport({
        mode,
        fetch: net.fetch,
        streamFetch: net.streamFetch,
        WebSocket: net.WebSocket,
        backoff: { baseMs: 20, capMs: 100 },
      }).create(c)
      cleanups.push(() => t.close())
      const { receive, delivered, outcomes } = pipeline(bob)
      await t.listen(receive)
      await until(() => delivered.length === 4 && outcomes.length === 8)
      await t.close()
      expect(delivered.map((m) => m.message_id)).toEqual(legal.map((m) => m.message_id))
      // The garbage was refused for good, each entry alone (the `0.0` one by its member, the
      // others handed over as text); the three that can be named were acknowledged, the
      // unbalanced one (it names nothing) skipped by its cursor. No connection failed.
      const refused = outcomes.filter((o) => o.status === 'refused')
      expect(refused).toHaveLength(4)
      for (const o of refused)
        expect(o).toMatchObject({ error: { code: 'invalid_format' }, retry: false })
      expect(refused.map((o) => (o.status === 'refused' ? o.error.field : ''))).toContain(
        'sequence',
      )
      expect(errors).toEqual([])
      const held = await store.retrieve(bob.id, { limit: 10, maxBytes: 1 << 20, now: Date.now() })
      expect(held.entries.map((e) => e.messageId)).toEqual(['broken'])
    })
  }

  it('retrieve: pages hand the 64-deep message over as a value and isolate the garbage', async () => {
    const { store, bob, relay, legal } = await poisonedMailbox()
    const client = clientFor(bob, relay.url)
    // The first page stops short of the unbalanced entry (it may swallow its neighbours).
    const page = await client.retrieve()
    expect(page.entries.length).toBeGreaterThanOrEqual(1)
    expect(page.entries[0]!.value).toEqual(
      expect.objectContaining({ message_id: legal[0]!.message_id }),
    )

    const { receive, delivered, outcomes } = pipeline(bob)
    const result = await client.drain(pipelineHandler(receive))
    expect(result.handled).toBe(8)
    expect(delivered.map((m) => m.message_id)).toEqual(legal.map((m) => m.message_id))
    expect(outcomes.filter((o) => o.status === 'refused')).toHaveLength(4)
    // Everything that could be named was acknowledged; the cursor passed the rest.
    const held = await store.retrieve(bob.id, { limit: 10, maxBytes: 1 << 20, now: Date.now() })
    expect(held.entries.map((e) => e.messageId)).toEqual(['broken'])
    expect((await client.retrieve({ after: result.cursor })).entries).toEqual([])
  })

  it('retrieve: a page made 66 deep by a legal 64-deep message is read whole', async () => {
    const { relay, bob, legal } = await poisonedMailbox()
    const page = await clientFor(bob, relay.url).retrieve({ limit: 2 })
    expect(page.messages.map((m) => (m as Message).message_id)).toEqual(
      legal.slice(0, 2).map((m) => m.message_id),
    )
  })
})
