/**
 * Attack (issue 9, item 8): a peer-chosen server answers with a body that never ends. Every
 * reader on the https side stops at its cap (PROFILE §4) and closes the connection: identity
 * documents at 64 KiB, inbox replies at 16 KiB (error bodies) or not read at all (2xx), and
 * `createNodeFetch`'s own default of 8 MiB + 64 KiB under everything else. Measured in this
 * process: the bytes the server managed to hand to its socket before the client closed, and the
 * growth of the resident set.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { type AgentMsgError, isAgentMsgError, PROFILE, type Transport } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { afterEach, describe, expect, it } from 'vitest'
import { httpsTransport } from '../src/https-transport.js'
import { createNodeFetch } from '../src/node-fetch.js'
import { type EndlessServer, endlessServer } from './attack-helpers.js'
import { createNodeIdentityFetcher } from './identity-helpers.js'
import { testCertificate } from './tls.js'
import { transportComponents } from './transport-helpers.js'

const { ca } = await testCertificate()
// The agent's defaults, with the one allowance a loopback test needs.
const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
const MiB = 1024 * 1024
const DEFAULT_MAX_RESPONSE_BYTES = PROFILE.pageMaxBytes

/** An https transport that sends with the agent's default fetch. */
async function createSender(): Promise<Transport> {
  const fetch = createNodeFetch({ ca, addressPolicy })
  return httpsTransport({ fetch }).create(await transportComponents('alice'))
}

const servers: EndlessServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function endless(status?: number): Promise<EndlessServer> {
  const s = await endlessServer(status)
  servers.push(s)
  return s
}

/** Resident set growth across `fn`, in bytes, after a GC when one is exposed. */
async function rssGrowth(fn: () => Promise<void>): Promise<number> {
  globalThis.gc?.()
  const before = process.memoryUsage().rss
  await fn()
  globalThis.gc?.()
  return process.memoryUsage().rss - before
}

describe('attack: an endless response body', () => {
  it('an identity document is cut at 64 KiB while streaming: not found, < 1 MiB written', async () => {
    const server = await endless()
    const fetchIdentity = createNodeIdentityFetcher({ ca, addressPolicy })
    const agent = `https://127.0.0.1:${server.port}/agents/endless`
    const growth = await rssGrowth(async () => {
      expect(await fetchIdentity(agent)).toEqual({
        status: 'not_found',
        reason: `identity document of ${agent} is too large (more than 65536 bytes)`,
      })
      await server.settled()
    })
    expect(server.requests).toBe(1)
    expect(server.written).toBeLessThan(1 * MiB)
    expect(growth).toBeLessThan(64 * MiB)
  })

  it('an inbox refusing with an endless error body: the send fails, < 1 MiB written', async () => {
    const server = await endless(400)
    const sender = await createSender()
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, alice.id)
    const url = `https://127.0.0.1:${server.port}/.well-known/agentmsg/inbox`
    try {
      const growth = await rssGrowth(async () => {
        const error = await sender
          .send(m, { kind: 'inbox', agent: alice.id, urls: [url], route: 'direct' })
          .catch((e: unknown) => e)
        // A refusal by the peer: its status, not retried.
        expect(isAgentMsgError(error)).toBe(true)
        expect(error).toMatchObject({ peerStatus: 400 })
        expect((error as AgentMsgError).shouldRetry()).toBe(false)
        await server.settled()
      })
      expect(server.written).toBeLessThan(1 * MiB)
      expect(growth).toBeLessThan(64 * MiB)
    } finally {
      await sender.close()
    }
  })

  it('an inbox accepting with an endless body: delivered, the body not read', async () => {
    const server = await endless(202)
    const sender = await createSender()
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, alice.id)
    const url = `https://127.0.0.1:${server.port}/.well-known/agentmsg/inbox`
    try {
      const target = { kind: 'inbox', agent: alice.id, urls: [url], route: 'direct' } as const
      const receipt = await sender.send(m, target)
      expect(receipt).toMatchObject({ messageId: m.message_id })
      await server.settled()
      expect(server.written).toBeLessThan(1 * MiB)
    } finally {
      await sender.close()
    }
  })

  it('createNodeFetch caps any body at 8 MiB + 64 KiB by default and closes', async () => {
    const server = await endless()
    const fetch = createNodeFetch({ ca, addressPolicy })
    const growth = await rssGrowth(async () => {
      const res = await fetch(`https://127.0.0.1:${server.port}/page`)
      expect(res.status).toBe(200)
      const error = await res.arrayBuffer().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(/is larger than 8454144 bytes/)
      await server.settled()
    })
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(8 * MiB + 64 * 1024)
    expect(server.written).toBeLessThan(DEFAULT_MAX_RESPONSE_BYTES + 4 * MiB)
    expect(growth).toBeLessThan(128 * MiB)
  })

  it('a smaller maxResponseBytes is honoured; a stream fetch (timeoutMs 0) has no total cap', async () => {
    const server = await endless()
    const small = createNodeFetch({ ca, addressPolicy, maxResponseBytes: 100_000 })
    const res = await small(`https://127.0.0.1:${server.port}/small`)
    await expect(res.text()).rejects.toThrow(/is larger than 100000 bytes/)
    await server.settled()
    expect(server.written).toBeLessThan(1 * MiB)

    // A long-lived stream is read event by event by its reader, which caps each event; the
    // fetch itself then sets no total (the caller reads past 10 MiB here, then cancels).
    const stream = createNodeFetch({ ca, addressPolicy, timeoutMs: 0 })
    const body = (await stream(`https://127.0.0.1:${server.port}/stream`)).body!.getReader()
    let read = 0
    while (read < 10 * MiB) read += (await body.read()).value!.byteLength
    await body.cancel()
    await server.settled()
    expect(read).toBeGreaterThanOrEqual(10 * MiB)
  })
})
