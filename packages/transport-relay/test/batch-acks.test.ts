/**
 * PROFILE §9 acknowledge: a client that receives faster than one round trip per message
 * acknowledges with `POST /relay/ack` in batches, one batch in flight, so SSE delivery is not
 * paced by acknowledgements. Against a real relay on 127.0.0.1, counting the requests the
 * transport makes through a wrapping `fetch`.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { type Message, memoryStorage, type TransportComponents } from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { createReceiver } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { AckBatcher } from '../src/client/ack-batch.js'
import { relayTransport } from '../src/client/relay-transport.js'
import { cleanups, clientFor, net, setupRelayTests, startRelay, until } from './client-fixtures.js'

setupRelayTests()

/**
 * A fetch that counts acknowledgement requests and how many were in flight at once. Each one
 * takes 50 ms more, as over a real network, where a round trip per message would pace delivery.
 */
function countingFetch(inner: typeof fetch) {
  const seen = { batches: [] as number[], deletes: 0, inFlight: 0, maxInFlight: 0 }
  const wrapped = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input))
    const method = init?.method ?? 'GET'
    if (method === 'DELETE' && url.pathname.startsWith('/relay/messages/')) seen.deletes++
    if (method !== 'POST' || url.pathname !== '/relay/ack') return inner(input, init)
    const body = JSON.parse(new TextDecoder().decode(init!.body as Uint8Array)) as {
      acks: unknown[]
    }
    seen.batches.push(body.acks.length)
    seen.inFlight++
    seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight)
    try {
      await new Promise((r) => setTimeout(r, 50))
      const res = await inner(input, init)
      // The reply is read by the client; in flight until then, so count it out once read.
      const text = await res.text()
      return new Response(text, { status: res.status, headers: res.headers })
    } finally {
      seen.inFlight--
    }
  }) as typeof fetch
  return { fetch: wrapped, seen }
}

describe('batched acknowledgements', () => {
  it('200 messages over SSE are acknowledged in a few POST /relay/ack, one in flight', async () => {
    // 200 publishes from one address: the per-address limit is not what this test is about.
    const { relay } = await startRelay({
      limits: { perAddress: false, perSender: { perMinute: 6000, burst: 1000 } },
    })
    cleanups.push(() => relay.close())
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    const bobClient = clientFor(bob, relay.url)
    await bobClient.subscribe()
    const aliceClient = clientFor(alice, relay.url)
    const sent: Message[] = []
    for (let i = 0; i < 200; i++) {
      const m = await signedMessage(alice, bob.id, { text: `m${i}` })
      await aliceClient.publish(m)
      sent.push(m)
    }

    const counting = countingFetch(net.fetch)
    const delivered: string[] = []
    const receiver = createReceiver({
      agentId: bob.id,
      resolver: createKeyResolver(),
      onMessage: async (m) => void delivered.push(m.message_id),
      onError: () => {},
    })
    cleanups.push(() => receiver.close())
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
      mode: 'sse',
      fetch: counting.fetch,
      streamFetch: net.streamFetch,
    }).create(c)
    cleanups.push(() => t.close())
    await t.listen(receiver.receive)
    await until(() => delivered.length === 200)
    // close() flushes the batch still pending.
    await t.close()

    expect(delivered).toEqual(sent.map((m) => m.message_id))
    expect(errors).toEqual([])
    const { batches, deletes, maxInFlight } = counting.seen
    expect(batches.reduce((a, b) => a + b, 0)).toBe(200)
    expect(batches.length).toBeGreaterThanOrEqual(2)
    expect(batches.length).toBeLessThanOrEqual(40) // 200 with one round trip per message
    for (const n of batches) expect(n).toBeLessThanOrEqual(500)
    expect(maxInFlight).toBe(1)
    expect(deletes).toBe(0)
    expect((await bobClient.retrieve()).messages).toEqual([])
  })

  it('a batcher sends at once when idle, gathers while one is in flight, and retries a failure', async () => {
    const sent: string[][] = []
    let inFlight = 0
    let maxInFlight = 0
    let failOnce = true
    const gates: Array<() => void> = []
    const batcher = new AckBatcher(
      async (entries) => {
        inFlight++
        maxInFlight = Math.max(maxInFlight, inFlight)
        await new Promise<void>((r) => gates.push(r))
        inFlight--
        if (failOnce) {
          failOnce = false
          throw new Error('connection reset')
        }
        sent.push(entries.map((e) => e.messageId))
      },
      () => {},
      3,
    )
    const from = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'
    await batcher.add({ messageId: 'a', from })
    for (const id of ['b', 'c', 'd']) await batcher.add({ messageId: id, from })
    // A full batch waits behind the one in flight: the next add waits for room.
    let queued = false
    const e = batcher.add({ messageId: 'e', from }).then(() => (queued = true))
    await new Promise((r) => setTimeout(r, 20))
    expect(queued).toBe(false)
    expect(batcher.pending).toBe(3)
    gates.shift()!() // 'a' fails (a network error): tried again before the next batch
    await until(() => gates.length === 1)
    gates.shift()!()
    await e
    const flushed = batcher.flush()
    for (let batch = 0; batch < 2; batch++) {
      await until(() => gates.length === 1)
      gates.shift()!()
    }
    await flushed
    expect(sent).toEqual([['a'], ['b', 'c', 'd'], ['e']])
    expect(maxInFlight).toBe(1)
  })
})
