/**
 * The relay client against the real relay (packages/relay) over HTTPS on 127.0.0.1: publish →
 * retrieve → ack, SSE and WebSocket streams that survive a relay restart with no loss and no
 * duplicate, tampered messages caught after delivery, failover, and the Transport.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createKeyResolver,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
  type Message,
  type Signer,
} from '@agentmsg/core'
import {
  createAddressPolicy,
  createDevCertificate,
  createNodeFetch,
  type DevCertificate,
} from '@agentmsg/transport-https/node'
import { WebSocket as NodeWebSocket } from 'ws'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { memoryRelayStore, serveRelay, type RelayStore } from '@agentmsg/relay'
import {
  createRelayClient,
  publishWithFailover,
  relayTransport,
  type RejectedDelivery,
  type RelayClient,
  type WebSocketConstructor,
} from '../src/client/index.js'

interface Agent {
  did: string
  signer: Signer
}

async function newAgent(): Promise<Agent> {
  const keys = await generateKeyPair()
  return { did: didKeyFromPublicKey(keys.publicKey), signer: ed25519Signer(keys) }
}

let sequence = 0
async function message(from: Agent, to: string, text: string): Promise<Message> {
  const unsigned = createMessage({
    from: from.did,
    to,
    conversationId: 'conv-1',
    sequence: sequence++,
    phase: 'request',
    contentType: 'text/plain',
    text,
  })
  return signMessage(unsigned, from.signer)
}

let cert: DevCertificate
let fetchFn: typeof fetch
let streamFetch: typeof fetch
let DevWebSocket: WebSocketConstructor
const tmpDirs: string[] = []
const cleanups: Array<() => Promise<void>> = []

beforeAll(async () => {
  cert = await createDevCertificate()
  const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
  fetchFn = createNodeFetch({ ca: cert.cert, addressPolicy, timeoutMs: 10_000 })
  streamFetch = createNodeFetch({ ca: cert.cert, addressPolicy, timeoutMs: 0 })
  const ca = cert.cert
  DevWebSocket = class extends NodeWebSocket {
    constructor(url: string) {
      super(url, { ca })
    }
  } as unknown as WebSocketConstructor
})

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => {})
})

afterAll(async () => {
  for (const dir of tmpDirs) await rm(dir, { recursive: true, force: true })
})

async function startRelay(options: { port?: number; dataDir?: string; store?: RelayStore } = {}) {
  let dataDir = options.dataDir
  if (!dataDir) {
    dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-relay-client-'))
    tmpDirs.push(dataDir)
  }
  const relay = await serveRelay({
    dataDir,
    port: options.port ?? 0,
    tls: { cert: cert.cert, key: cert.key },
    allowPrivate: ['127.0.0.1'],
    closeTimeoutMs: 500,
    limits: { perSender: { perMinute: 6000, burst: 1000 } },
    onError: () => {},
    ...(options.store ? { store: options.store } : {}),
  })
  return { relay, dataDir }
}

function clientFor(agent: Agent, relayUrl: string): RelayClient {
  return createRelayClient({
    relayUrl,
    agent: agent.did,
    signer: agent.signer,
    resolver: createKeyResolver(),
    fetch: fetchFn,
    streamFetch,
    WebSocket: DevWebSocket,
  })
}

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 20))
  }
}

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
  it('publishes, retrieves verified messages, acknowledges them', async () => {
    const { relay } = await startRelay()
    cleanups.push(() => relay.close())
    const alice = await newAgent()
    const bob = await newAgent()
    const bobClient = clientFor(bob, relay.url)
    const { subscriptionId } = await bobClient.subscribe()
    expect(subscriptionId).toEqual(expect.any(String))

    const m1 = await message(alice, bob.did, 'one')
    const m2 = await message(alice, bob.did, 'two')
    const aliceClient = clientFor(alice, relay.url)
    expect(await aliceClient.publish(m1)).toEqual({ messageId: m1.message_id })
    expect(await aliceClient.publish(m2)).toEqual({ messageId: m2.message_id })

    const page = await bobClient.retrieve()
    expect(page.rejected).toEqual([])
    expect(page.messages.map((m) => m.message_id)).toEqual([m1.message_id, m2.message_id])
    expect(page.verified[0]!.keyId).toBe(alice.signer.keyId)
    // The relay appended its trace entry; the signature still verifies (trace is unsigned).
    expect(page.messages[0]!.trace?.received[0]?.by).toBe(`relay:${relay.url}`)
    expect(page.cursor).toEqual(expect.any(String))

    const next = await bobClient.retrieve({ after: page.cursor })
    expect(next.messages).toEqual([])

    await bobClient.ack(m1.message_id, alice.did)
    await bobClient.ack(m2.message_id, alice.did)
    expect((await bobClient.retrieve()).messages).toEqual([])
    await expect(bobClient.ack(m1.message_id, alice.did)).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    })

    // Errors carry the relay's code: a mailbox that was never opened → 404.
    const carol = await newAgent()
    await expect(aliceClient.publish(await message(alice, carol.did, 'x'))).rejects.toMatchObject({
      code: 'not_found',
    })
    // Another agent's mailbox → 403 forbidden (agent auth binds the agent).
    const mallory = createRelayClient({
      relayUrl: relay.url,
      agent: bob.did,
      signer: alice.signer,
      resolver: createKeyResolver(),
      fetch: fetchFn,
    })
    await expect(mallory.retrieve()).rejects.toMatchObject({ code: 'forbidden' })

    await bobClient.unsubscribe(subscriptionId)
    await expect(aliceClient.publish(await message(alice, bob.did, 'late'))).rejects.toMatchObject({
      code: 'not_found',
    })
  })

  for (const mode of ['sse', 'ws'] as const) {
    it(`${mode}: resumes across a relay restart with no loss and no duplicate`, async () => {
      let { relay, dataDir } = await startRelay()
      const port = relay.port
      cleanups.push(() => relay.close())
      const alice = await newAgent()
      const bob = await newAgent()
      const bobClient = clientFor(bob, relay.url)
      await bobClient.subscribe()
      const aliceClient = clientFor(alice, relay.url)
      const sent: Message[] = []
      for (const text of ['m1', 'm2', 'm3']) {
        const m = await message(alice, bob.did, text)
        await aliceClient.publish(m)
        sent.push(m)
      }

      const handled: string[] = []
      const errors: unknown[] = []
      let restarted = false
      const handle = bobClient.stream(
        async ({ message: m }) => {
          handled.push(m.message_id)
          if (m.message_id === sent[1]!.message_id && !restarted) {
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
        const m = await message(alice, bob.did, text)
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
    it(`${mode}: a message tampered with in the relay is caught, not delivered, not acked`, async () => {
      const store = memoryRelayStore()
      const { relay } = await startRelay({ store: tamperingStore(store, 'TAMPER-ME') })
      cleanups.push(() => relay.close())
      const alice = await newAgent()
      const bob = await newAgent()
      const bobClient = clientFor(bob, relay.url)
      await bobClient.subscribe()
      const good1 = await message(alice, bob.did, 'fine')
      const bad = await message(alice, bob.did, 'TAMPER-ME')
      const good2 = await message(alice, bob.did, 'also fine')
      for (const m of [good1, bad, good2]) await bobClient.publish(m)

      let delivered: string[]
      let rejected: RejectedDelivery[]
      if (mode === 'retrieve') {
        const page = await bobClient.retrieve()
        delivered = page.messages.map((m) => m.message_id)
        rejected = page.rejected
        for (const m of page.messages) await bobClient.ack(m.message_id, m.from.agent)
      } else {
        delivered = []
        rejected = []
        const handle = bobClient.stream(
          ({ message: m }) => {
            delivered.push(m.message_id)
          },
          { mode, onRejected: (r) => rejected.push(r) },
        )
        cleanups.push(() => handle.close())
        await until(() => delivered.length === 2 && rejected.length === 1)
        await new Promise((r) => setTimeout(r, 200))
        await handle.close()
      }
      expect(delivered).toEqual([good1.message_id, good2.message_id])
      expect(rejected).toHaveLength(1)
      expect(rejected[0]!.error.code).toBe('invalid_signature')
      expect(rejected[0]!.messageId).toBe(bad.message_id)
      expect(rejected[0]!.from).toBe(alice.did)
      // Only the tampered one is still held: it was never acknowledged.
      expect(await store.usage(bob.did)).toMatchObject({ messages: 1 })
    })
  }

  it('fails over from a dead relay to a live one, and the Transport sends and listens', async () => {
    const { relay } = await startRelay()
    cleanups.push(() => relay.close())
    const { relay: dead } = await startRelay()
    const deadUrl = dead.url
    await dead.close() // nothing listens on this port any more
    const alice = await newAgent()
    const bob = await newAgent()
    const bobClient = clientFor(bob, relay.url)
    await bobClient.subscribe()

    const m = await message(alice, bob.did, 'failover')
    const result = await publishWithFailover(m, [deadUrl, relay.url], { fetch: fetchFn })
    expect(result.relayUrl).toBe(relay.url)
    expect(result.messageId).toBe(m.message_id)
    expect(result.failed.map((f) => f.relayUrl)).toEqual([deadUrl])

    const transport = relayTransport({ client: bobClient, stream: { mode: 'ws' } })
    expect(transport.protocol).toBe('relay')
    const received: Array<{ id: string; transport: string; cursor?: string }> = []
    await transport.listen(async (d) => {
      received.push({ id: d.message.message_id, transport: d.transport, cursor: d.cursor })
    })
    const m2 = await message(alice, bob.did, 'via transport')
    const receipt = await transport.send(m2, { kind: 'relay', relayUrl: relay.url })
    expect(receipt).toEqual({
      messageId: m2.message_id,
      target: { kind: 'relay', relayUrl: relay.url },
    })
    await until(() => received.length === 2)
    expect(received.map((r) => r.id)).toEqual([m.message_id, m2.message_id])
    expect(received[0]!.transport).toBe('relay')
    await transport.close()
    expect((await bobClient.retrieve()).messages).toEqual([])
  })
})
