/**
 * An inbox handing its bodies to a receiver it does not own (`receive`: an agent's, shared with
 * its other transports), through a real HTTPS server: the outcome becomes 202 or the error, the
 * per-sender limit is the inbox's, and closing the inbox leaves the receiver to its owner.
 */

import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import {
  type DeliveryHandler,
  ed25519Signer,
  type InboundDelivery,
  type Message,
  type ReceivedInfo,
  type Receiver,
} from '@agentmsg/core'
import { createReceiver, didKeyResolver } from '@agentmsg/core/receive'
import { afterEach, describe, expect, it } from 'vitest'
import { createInboxHandler } from '../src/inbox/handler.js'
import type { InboxHandler, InboxHandlerOptions } from '../src/inbox/types.js'
import { type HttpsServer, serveHttps } from '../src/node-server.js'
import { type ClientResponse, deferred, INBOX_PATH, post, until } from './inbox-helpers.js'
import { testCertificate } from './tls.js'

const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c()
})

/** A receiver for a fresh agent, and an inbox over real HTTPS that hands it every body. */
async function setup(
  options: {
    onMessage?: (m: Message, info: ReceivedInfo) => Promise<void>
    maxQueue?: number
  } = {},
  inboxOptions: Partial<InboxHandlerOptions> = {},
) {
  const agent = await fixtureAgent()
  const received: Array<{ message: Message; info: ReceivedInfo }> = []
  const receiver: Receiver = createReceiver({
    agentId: agent.id,
    resolver: didKeyResolver(),
    onMessage:
      options.onMessage ??
      (async (message, info) => {
        received.push({ message, info })
      }),
    onError: () => undefined,
    ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue, queueRetryAfter: 9 } : {}),
  })
  const deliveries: InboundDelivery[] = []
  const receive: DeliveryHandler = (delivery) => {
    deliveries.push(delivery)
    return receiver.receive(delivery)
  }
  const handler: InboxHandler = createInboxHandler({ agentId: agent.id, receive, ...inboxOptions })
  const { cert, key } = await testCertificate()
  const server: HttpsServer = await serveHttps(handler, { tls: { cert, key } })
  cleanup.push(async () => {
    await receiver.close({ drain: false })
    await handler.close({ drain: false })
    await server.close()
  })
  return { agent, receiver, handler, server, url: server.url + INBOX_PATH, received, deliveries }
}

function expectError(r: ClientResponse, status: number, code: string): void {
  expect({ status: r.status, code: r.json?.code }).toEqual({ status, code })
  expect(Object.keys(r.json).sort()).toEqual(['code', 'message', 'status'])
  if (status === 429 || status === 503) expect(r.headers['retry-after']).toMatch(/^[1-9][0-9]*$/)
}

describe('an inbox with a shared receiver', () => {
  it('answers 202 and the receiver processes the message as delivered by https', async () => {
    const { agent, url, received, deliveries, handler } = await setup()
    await handler.ready
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, agent.id)
    const r = await post(url, m, { 'idempotency-key': m.message_id })
    expect(r.status).toBe(202)
    expect(r.json).toEqual({ status: 'accepted', message_id: m.message_id })
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]).toMatchObject({ transport: 'https', idempotencyKey: m.message_id })
    expect(deliveries[0]!.body).toBeInstanceOf(Uint8Array)
    await until(() => received.length === 1)
    expect(received[0]!.info).toMatchObject({ level: 3, transport: 'https', knownContact: false })
    // A duplicate is 202 again, processed once.
    expect((await post(url, m)).status).toBe(202)
    await new Promise((res) => setTimeout(res, 20))
    expect(received).toHaveLength(1)
  })

  it('maps refusals to their status: 400, 401, 503 with the receiver’s Retry-After', async () => {
    const gate = deferred()
    const { agent, url } = await setup({ onMessage: () => gate.promise, maxQueue: 1 })
    const alice = await fixtureAgent()
    const mallory = await fixtureAgent()
    expectError(await post(url, '{"a":1,"a":2}'), 400, 'invalid_format')
    const forged = await signedMessage(
      alice,
      agent.id,
      {},
      {
        signer: ed25519Signer(mallory.keys, alice.signer.keyId),
      },
    )
    expectError(await post(url, forged), 401, 'invalid_signature')
    expect((await post(url, await signedMessage(alice, agent.id))).status).toBe(202)
    const full = await post(url, await signedMessage(alice, agent.id))
    expectError(full, 503, 'unavailable')
    expect(full.headers['retry-after']).toBe('9')
    gate.resolve()
  })

  it('charges its own per-sender limit, duplicates excepted', async () => {
    const { agent, url } = await setup({}, { limits: { perSender: { perMinute: 60, burst: 2 } } })
    const alice = await fixtureAgent()
    const first = await signedMessage(alice, agent.id)
    expect((await post(url, first)).status).toBe(202)
    expect((await post(url, await signedMessage(alice, agent.id))).status).toBe(202)
    // A replay of an accepted message does not spend alice's quota.
    expect((await post(url, first)).status).toBe(202)
    expectError(await post(url, await signedMessage(alice, agent.id)), 429, 'rate_limited')
  })

  it('close() waits for deliveries being answered, then refuses; the receiver stays open', async () => {
    const entered = deferred()
    const release = deferred()
    const agent = await fixtureAgent()
    const receiver = createReceiver({
      agentId: agent.id,
      resolver: didKeyResolver(),
      onMessage: async () => undefined,
    })
    const handler = createInboxHandler({
      agentId: agent.id,
      receive: async (delivery) => {
        entered.resolve()
        await release.promise
        return receiver.receive(delivery)
      },
    })
    const { cert, key } = await testCertificate()
    const server = await serveHttps(handler, { tls: { cert, key } })
    const url = server.url + INBOX_PATH
    const m = await signedMessage(await fixtureAgent(), agent.id)
    const pending = post(url, m)
    await entered.promise
    expect(handler.pending).toBe(1)
    let closed = false
    const closing = handler.close().then(() => (closed = true))
    const refused = await post(url, await signedMessage(await fixtureAgent(), agent.id))
    expectError(refused, 503, 'unavailable')
    expect(closed).toBe(false)
    release.resolve()
    expect((await pending).status).toBe(202)
    await closing
    expect(handler.pending).toBe(0)
    // The receiver is its owner's: still taking deliveries from other transports.
    const other = await signedMessage(await fixtureAgent(), agent.id)
    const body = new TextEncoder().encode(JSON.stringify(other))
    expect((await receiver.receive({ body, transport: 'relay' })).status).toBe('accepted')
    await receiver.close()
    await server.close()
  })

  it('needs either receive or the standalone fields', () => {
    expect(() => createInboxHandler({ agentId: 'bob' })).toThrow(/onMessage is required/)
    expect(() => createInboxHandler({ agentId: 'bob', onMessage: async () => undefined })).toThrow(
      /resolver is required/,
    )
  })
})
