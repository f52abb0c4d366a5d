/**
 * httpsTransport as a core Transport over a real HTTPS inbox on 127.0.0.1: its targets, and
 * `send` as one POST classified by core's rules (2xx → receipt; anything else → the peer's
 * AgentMsgError, a network failure → `unavailable`, a refused address → no `peerStatus`).
 */
import type { ServerResponse } from 'node:http'
import {
  type AgentMsgError,
  type DeliveryTarget,
  type IdentityDocument,
  isAgentMsgError,
  type Transport,
} from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { httpsTransport } from '../src/https-transport.js'
import {
  accept,
  agentId,
  cleanups,
  inboxTarget,
  message,
  reply,
  setupTransportTests,
  startInbox,
  testFetch,
  transportComponents,
  urlTarget,
} from './transport-helpers.js'

setupTransportTests()

async function transport(
  o: { fetch?: typeof fetch; attemptTimeoutMs?: number } = {},
): Promise<Transport> {
  const t = await httpsTransport({ fetch: o.fetch ?? testFetch(), ...o }).create(
    await transportComponents(agentId()),
  )
  cleanups.push(() => t.close())
  return t
}

const error500 = { status: 'error', code: 'internal_error', message: 'down' }

/** The rejection of a send, as an AgentMsgError. */
async function refusal(sent: Promise<unknown>): Promise<AgentMsgError> {
  const error = await sent.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(isAgentMsgError(error)).toBe(true)
  return error as AgentMsgError
}

describe('httpsTransport', () => {
  it('is a TransportFactory for inbox targets, without listen in the isomorphic entry', async () => {
    const factory = httpsTransport()
    expect(factory.protocol).toBe('https')
    const t = await transport()
    expect(t.protocol).toBe('https')
    expect('listen' in t).toBe(false)
  })

  it("targets a URL agent's inbox: direct, confidential, durable; nothing for other ids", async () => {
    const t = await transport()
    const inbox = 'https://bob.example/.well-known/agentmsg/inbox'
    const target = {
      kind: 'inbox',
      agent: 'https://bob.example',
      urls: [inbox],
      route: 'direct',
      confidential: true,
      durable: true,
    }
    expect(await t.targets!({ agent: 'https://bob.example', relays: [] })).toEqual([target])
    const document = { endpoints: { inbox } } as IdentityDocument
    const peer = { agent: 'https://bob.example', relays: ['https://r.example'], document }
    expect(await t.targets!(peer)).toEqual([target])
    expect(await t.targets!({ agent: agentId(), relays: [] })).toEqual([])
    expect(await t.targets!({ agent: 'bob', relays: [] })).toEqual([])
    // An error reply goes to the inbox its sender's document names (PROFILE §7).
    const given = 'https://alice.example/.well-known/agentmsg/inbox'
    expect(await t.targets!({ agent: agentId(), relays: [], inbox: given })).toEqual([
      { ...target, agent: agentId(), urls: [given] },
    ])
  })

  it('POSTs the message with the inbox headers, once, and resolves with the receipt on 202', async () => {
    const inbox = await startInbox()
    const t = await transport()
    const msg = await message()
    const receipt = await t.send(msg, inboxTarget(inbox))
    expect(receipt).toEqual({
      messageId: msg.message_id,
      target: inboxTarget(inbox),
      url: inbox.url,
    })
    expect(inbox.accepted.get(msg.message_id)).toBe(1)
    expect(inbox.requests).toHaveLength(1)
    const [req] = inbox.requests
    expect(req!.method).toBe('POST')
    expect(req!.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(req!.headers.accept).toBe('application/json')
    expect(req!.headers['idempotency-key']).toBe(msg.message_id)
    expect(JSON.parse(req!.body)).toEqual(msg)
  })

  it('a 5xx rejects with the peer error, retryable, after one request', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 500, error500)
    const t = await transport()
    const error = await refusal(t.send(await message(), inboxTarget(inbox)))
    expect(error).toMatchObject({ code: 'internal_error', status: 500, peerStatus: 500 })
    expect(error.shouldRetry()).toBe(true)
    expect(inbox.requests).toHaveLength(1)
  })

  it('a 429 rejects rate_limited with Retry-After; a refused connection unavailable', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(
        res,
        429,
        { status: 'error', code: 'rate_limited', message: 'slow' },
        { 'Retry-After': '7' },
      )
    const t = await transport()
    await expect(t.send(await message(), inboxTarget(inbox))).rejects.toMatchObject({
      code: 'rate_limited',
      status: 429,
      retryAfter: 7,
    })
    const port = inbox.port
    await inbox.close()
    const dead = urlTarget(`https://127.0.0.1:${port}/.well-known/agentmsg/inbox`)
    const error = await refusal(t.send(await message('two'), dead))
    expect(error).toMatchObject({ code: 'unavailable', status: 503, peerStatus: undefined })
    expect(error.message).toMatch(/network error/)
    expect(error.shouldRetry()).toBe(true)
  })

  it('a 4xx is a refusal: the peer code, its message, not retryable', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 400, { status: 'error', code: 'stale_message', message: 'date is 9 days old' })
    const t = await transport()
    const error = await refusal(t.send(await message(), inboxTarget(inbox)))
    expect(error).toMatchObject({
      code: 'stale_message',
      status: 400,
      peerStatus: 400,
      peerCode: 'stale_message',
    })
    expect(error.message).toMatch(/date is 9 days old/)
    expect(error.shouldRetry()).toBe(false)
  })

  it('keeps an unknown peer code verbatim and maps the status to a profile code', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 409, { status: 'error', code: 'conflict_thing', message: 'no' })
    const t = await transport()
    await expect(t.send(await message(), inboxTarget(inbox))).rejects.toMatchObject({
      code: 'invalid_format',
      peerStatus: 409,
      peerCode: 'conflict_thing',
    })
  })

  it('does not follow a redirect: a 3xx is not_found with its peerStatus', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) =>
      reply(res, 308, undefined, { Location: 'https://127.0.0.1:1/elsewhere' })
    const t = await transport()
    const error = await refusal(t.send(await message(), inboxTarget(inbox)))
    expect(error).toMatchObject({ code: 'not_found', peerStatus: 308 })
    expect(error.shouldRetry()).toBe(false)
    expect(inbox.requests).toHaveLength(1)
  })

  it('a 408 is unavailable: the peer gave up waiting, try again', async () => {
    const inbox = await startInbox()
    inbox.script = (_req, res) => reply(res, 408, undefined)
    const t = await transport()
    const error = await refusal(t.send(await message(), inboxTarget(inbox)))
    expect(error).toMatchObject({ code: 'unavailable', peerStatus: 408 })
    expect(error.shouldRetry()).toBe(true)
  })

  it('a refused inbox address rejects with no peerStatus: not a refusal by the peer', async () => {
    const inbox = await startInbox()
    const t = await transport({ fetch: testFetch([]) })
    const error = await refusal(t.send(await message(), inboxTarget(inbox)))
    expect(error).toMatchObject({ code: 'forbidden', peerStatus: undefined })
    expect(error.message).toMatch(/127\.0\.0\.1/)
    // The router's rule: a refusal by the peer ends the delivery; this one fails over.
    expect(error.peerStatus !== undefined && !error.shouldRetry()).toBe(false)
    expect(inbox.requests).toHaveLength(0)
  })

  it('refuses http: and other non-https targets without a request', async () => {
    const inbox = await startInbox()
    let calls = 0
    const fetch = testFetch()
    const t = await transport({
      fetch: ((i, o) => (calls++, fetch(i, o))) as typeof globalThis.fetch,
    })
    const msg = await message()
    const http = urlTarget(`http://127.0.0.1:${inbox.port}/.well-known/agentmsg/inbox`)
    await expect(t.send(msg, http)).rejects.toMatchObject({
      code: 'invalid_format',
      field: 'target.urls',
      message: expect.stringMatching(/only https: is used/),
    })
    await expect(t.send(msg, urlTarget('ftp://x.example/inbox'))).rejects.toThrow(/https/)
    await expect(t.send(msg, urlTarget('not a url'))).rejects.toThrow(/not a URL/)
    const relay: DeliveryTarget = {
      kind: 'relay',
      agent: agentId(),
      urls: ['https://relay.example'],
      route: 'relay',
    }
    await expect(t.send(msg, relay)).rejects.toThrow(/inbox targets/)
    expect(calls).toBe(0)
    expect(inbox.requests).toHaveLength(0)
  })

  it('refuses a body over 1 MiB + 64 KiB without a request', async () => {
    const inbox = await startInbox()
    const t = await transport()
    const big = await message('x'.repeat(1_048_576 + 65_536))
    await expect(t.send(big, inboxTarget(inbox))).rejects.toMatchObject({
      code: 'payload_too_large',
      status: 413,
    })
    expect(inbox.requests).toHaveLength(0)
  })

  it('an abort during the attempt rejects with its reason; a slow inbox times out', async () => {
    const inbox = await startInbox()
    const held: ServerResponse[] = []
    inbox.script = (_req, res) => void held.push(res) // never answers
    cleanups.push(() => held.forEach((res) => res.destroy()))
    const t = await transport({ attemptTimeoutMs: 200 })
    const controller = new AbortController()
    const sent = t.send(await message(), inboxTarget(inbox), { signal: controller.signal })
    await expect.poll(() => inbox.requests.length).toBe(1)
    controller.abort(new Error('gave up'))
    await expect(sent).rejects.toThrow('gave up')
    const error = await refusal(t.send(await message('two'), inboxTarget(inbox)))
    expect(error).toMatchObject({ code: 'unavailable', peerStatus: undefined })
    expect(error.message).toMatch(/no answer within 200 ms/)
    inbox.script = accept
  })
})
