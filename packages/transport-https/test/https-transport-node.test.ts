/**
 * The Node https transport with an inbox: `listen(receive)` serves the inbox over real HTTPS on
 * 127.0.0.1 and hands each POST to `receive`; the outcome becomes the HTTP answer, which
 * another https transport (default Node fetch with a CA and the address policy) reads.
 */
import {
  AgentMsgError,
  type DeliveryHandler,
  type DeliveryOutcome,
  type IdentityDocument,
  type InboundDelivery,
} from '@agentmsg/core'
import { utf8Decode } from '@agentmsg/core/http'
import { createAddressPolicy } from '@agentmsg/core/server'
import { describe, expect, it } from 'vitest'
import { httpsTransport } from '../src/node-transport.js'
import { testCertificate } from './tls.js'
import {
  agentId,
  cleanups,
  message,
  setupTransportTests,
  transportComponents,
  urlTarget,
} from './transport-helpers.js'

setupTransportTests()

type NodeHttpsTransport = ReturnType<ReturnType<typeof httpsTransport>['create']>

const INBOX = '/.well-known/agentmsg/inbox'

/** A sending transport that trusts the test certificate and may reach 127.0.0.1. */
async function sender(): Promise<NodeHttpsTransport> {
  const cert = await testCertificate()
  const t = httpsTransport({
    ca: cert.ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
  }).create(await transportComponents(agentId()))
  cleanups.push(() => t.close())
  return t
}

/** A receiving transport whose inbox answers with `answer`'s outcome and records deliveries. */
async function receiver(
  answer: (d: InboundDelivery) => DeliveryOutcome,
  o: { basePath?: string; identity?: IdentityDocument } = {},
) {
  const cert = await testCertificate()
  const deliveries: InboundDelivery[] = []
  const receive: DeliveryHandler = async (d) => {
    deliveries.push(d)
    return answer(d)
  }
  const t = httpsTransport({
    inbox: { tls: cert, ...(o.basePath ? { basePath: o.basePath } : {}) },
  }).create(await transportComponents(agentId(), o.identity))
  cleanups.push(() => t.close())
  expect(t.url).toBeUndefined()
  await t.listen!(receive)
  return { transport: t, deliveries, inbox: `${t.url}${o.basePath ?? ''}${INBOX}` }
}

const accepted = (d: InboundDelivery): DeliveryOutcome => {
  const m = JSON.parse(utf8Decode(d.body as Uint8Array)) as { message_id: string }
  return { status: 'accepted', messageId: m.message_id }
}

describe('httpsTransport on Node with an inbox', () => {
  it('serves the inbox: the raw body goes to receive, and 202 comes back as the receipt', async () => {
    const bob = await receiver(accepted, { basePath: '/agents/bob' })
    expect(bob.transport.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
    expect(bob.transport.port).toBe(Number(new URL(bob.transport.url!).port))
    const alice = await sender()
    expect('listen' in alice).toBe(false) // no inbox option: nothing to listen on
    const msg = await message('to bob')
    const receipt = await alice.send(msg, urlTarget(bob.inbox))
    expect(receipt).toMatchObject({ messageId: msg.message_id, url: bob.inbox })
    expect(bob.deliveries).toHaveLength(1)
    const [d] = bob.deliveries
    expect(d!.transport).toBe('https')
    expect(d!.idempotencyKey).toBe(msg.message_id)
    expect(d!.body).toBeInstanceOf(Uint8Array)
    expect(JSON.parse(utf8Decode(d!.body as Uint8Array))).toEqual(msg)
  })

  it('answers refusals with their status: permanent ones reject, "for now" ones are retryable', async () => {
    const bad = await message('bad signature')
    const busy = await message('busy')
    const bob = await receiver((d) => {
      const { message_id: id } = JSON.parse(utf8Decode(d.body as Uint8Array)) as {
        message_id: string
      }
      if (id === bad.message_id) {
        const error = new AgentMsgError('invalid_signature', 'no')
        return { status: 'refused', error, retry: false }
      }
      if (id === busy.message_id) {
        const error = new AgentMsgError('unavailable', 'queue full', { retryAfter: 3 })
        return { status: 'refused', error, retry: true }
      }
      return accepted(d)
    })
    const alice = await sender()
    const refused = await alice.send(bad, urlTarget(bob.inbox)).catch((e: AgentMsgError) => e)
    expect(refused).toMatchObject({ code: 'invalid_signature', status: 401, peerStatus: 401 })
    expect((refused as AgentMsgError).shouldRetry()).toBe(false)
    const error = await alice.send(busy, urlTarget(bob.inbox)).catch((e: AgentMsgError) => e)
    expect(error).toMatchObject({ code: 'unavailable', retryAfter: 3, peerStatus: 503 })
    expect((error as AgentMsgError).shouldRetry()).toBe(true)
  })

  it('serves the identity document of the components; close() stops the server', async () => {
    const identity = { id: 'https://bob.example', keys: [] } as unknown as IdentityDocument
    const bob = await receiver(accepted, { identity })
    const cert = await testCertificate()
    const { createNodeFetch } = await import('../src/node-fetch.js')
    const fetch = createNodeFetch({
      ca: cert.ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    })
    const res = await fetch(`${bob.transport.url}/.well-known/agentmsg/identity`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(identity)
    await expect(bob.transport.listen!(async (d) => accepted(d))).rejects.toThrow(/already/)

    await bob.transport.close()
    const alice = await sender()
    await expect(alice.send(await message(), urlTarget(bob.inbox))).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(/network error/),
    })
  })
})
