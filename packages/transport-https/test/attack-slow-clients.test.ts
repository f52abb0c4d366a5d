/**
 * Issue 9, items 6 and 18, against a real inbox on loopback (PROFILE §6, slow and parallel
 * clients; no shared bucket): slow bodies from one address take at most 8 read slots, so
 * another address is still served; stalled headers and bodies close the connection; a server
 * adapter that passes no client address is refused unless per-address limiting is off.
 */
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { didKeyResolver } from '@agentmsg/core/receive'
import { afterEach, describe, expect, it } from 'vitest'
import { createInboxHandler } from '../src/inbox/handler.js'
import type { InboxHandlerOptions } from '../src/inbox/types.js'
import { getRequestListener, serveHttps, slowClientServerOptions } from '../src/node-server.js'
import { INBOX_PATH, startInbox, stopInboxes, until } from './inbox-helpers.js'
import {
  postFrom,
  type StalledUpload,
  stalledHeaders,
  stalledUpload,
} from './slow-client-helpers.js'
import { testCertificate } from './tls.js'

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn()
  await stopInboxes()
})

function destroyAll(uploads: StalledUpload[]): void {
  for (const u of uploads) u.destroy()
}

describe('slow and parallel clients (defaults)', () => {
  it('128 slow bodies from one address take 8 read slots; another address still gets 202', async () => {
    const inbox = await startInbox()
    const uploads: StalledUpload[] = []
    cleanups.push(() => destroyAll(uploads))
    // Each announces 1000 bytes, sends one and waits: the slowloris of issue 9 item 6.
    for (let i = 0; i < 128; i++) {
      uploads.push(await stalledUpload(inbox.inboxUrl, { length: 1000, sent: 1 }))
    }
    const answered: number[] = []
    for (const u of uploads) void u.response.then((r) => answered.push(r?.status ?? 0))
    await until(() => answered.length >= 120, 10_000)
    // 100 pass the rate limit (burst 100): 8 are read, 92 are over the address's read cap;
    // the other 28 are over the rate. All 120 are 429 with Retry-After: 1, none 503.
    expect(answered.length).toBe(120)
    expect(answered.every((status) => status === 429)).toBe(true)
    const alice = await fixtureAgent()
    const fromElsewhere = await postFrom(
      inbox.inboxUrl,
      await signedMessage(alice, inbox.agentId),
      '127.0.0.2',
    )
    expect(fromElsewhere?.status).toBe(202)
  })

  it('answers a ninth body from one address 429 rate_limited with Retry-After: 1', async () => {
    const inbox = await startInbox()
    const uploads: StalledUpload[] = []
    cleanups.push(() => destroyAll(uploads))
    for (let i = 0; i < 8; i++) {
      uploads.push(await stalledUpload(inbox.inboxUrl, { length: 1000, sent: 1 }))
    }
    // The eight are being read (their answers wait for bytes that never come).
    const ninth = await postFrom(inbox.inboxUrl, { not: 'read' })
    expect(ninth?.status).toBe(429)
    expect(ninth?.json?.code).toBe('rate_limited')
    expect(ninth?.headers['retry-after']).toBe('1')
    const alice = await fixtureAgent()
    const other = await postFrom(
      inbox.inboxUrl,
      await signedMessage(alice, inbox.agentId),
      '127.0.0.2',
    )
    expect(other?.status).toBe(202)
  })

  it('closes a connection whose request headers are not in within 10 s (default)', async () => {
    const inbox = await startInbox()
    // Headers never finished: Node's headersTimeout (10 s, checked every second) answers 408
    // and closes. The test waits for the close, about 10 s, with the default settings.
    const seen = await stalledHeaders(
      inbox.inboxUrl,
      `POST ${INBOX_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n`,
    )
    expect(seen).toMatch(/^HTTP\/1\.1 408 /)
  }, 25_000)

  it('uses 10 s for headers and TLS handshakes and 30 s for a body by default', () => {
    const t = slowClientServerOptions({})
    expect(t.http).toEqual({
      headersTimeout: 10_000,
      requestTimeout: 40_000,
      connectionsCheckingInterval: 1000,
    })
    expect(t.tls.handshakeTimeout).toBe(10_000)
    expect(t.bodyTimeoutMs).toBe(30_000)
  })
})

describe('slow bodies (body deadline set to 1 s: the default 30 s would make the test > 30 s)', () => {
  it('closes the connection of a body not in time and frees its read slot', async () => {
    const { cert, key } = await testCertificate()
    const handler = createInboxHandler({
      agentId: (await fixtureAgent()).id,
      resolver: didKeyResolver(),
      onMessage: async () => undefined,
    })
    const server = await serveHttps(handler, { tls: { cert, key }, bodyTimeoutMs: 1000 })
    cleanups.push(() => server.close())
    const url = server.url + INBOX_PATH
    const uploads: StalledUpload[] = []
    cleanups.push(() => destroyAll(uploads))
    for (let i = 0; i < 8; i++) uploads.push(await stalledUpload(url, { length: 1000, sent: 1 }))
    // Closed without an answer: the connection is cut, not answered.
    const outcomes = await Promise.all(uploads.map((u) => u.response))
    expect(outcomes).toEqual(new Array(8).fill(undefined))
    // The eight slots are free again: the same address is read and answered.
    const again = await postFrom(url, { not: 'a message' })
    expect(again?.status).toBe(400)
  })
})

/** An https server whose adapter drops the client address, as some frameworks do. */
async function serveWithoutAddress(
  fetch: (request: Request) => Promise<Response>,
): Promise<string> {
  const { cert, key } = await testCertificate()
  const server: Server = createServer(
    { cert, key, minVersion: 'TLSv1.2' },
    getRequestListener({ fetch: (request) => fetch(request) }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => {
    server.closeAllConnections()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}${INBOX_PATH}`
}

describe('an adapter that passes no client address (issue 9 item 18)', () => {
  const make = async (o: Partial<InboxHandlerOptions>, errors: unknown[]) =>
    createInboxHandler({
      agentId: (await fixtureAgent()).id,
      resolver: didKeyResolver(),
      onMessage: async () => undefined,
      onError: (e) => errors.push(e),
      ...o,
    })

  it('is refused with 500 and a report, never counted in one shared bucket', async () => {
    const errors: unknown[] = []
    const bob = await fixtureAgent()
    const inbox = await make({ agentId: bob.id }, errors)
    const url = await serveWithoutAddress((request) => inbox.fetch(request))
    const alice = await fixtureAgent()
    for (let i = 0; i < 3; i++) {
      const r = await postFrom(url, await signedMessage(alice, bob.id))
      expect(r?.status).toBe(500)
      expect(r?.json).toEqual({
        status: 'error',
        code: 'internal_error',
        message: 'internal error',
      })
    }
    expect(errors).toHaveLength(3)
    expect(String(errors[0])).toMatch(/passed no client address.*perAddress to false/s)
  })

  it('is served with per-address limiting explicitly off', async () => {
    const errors: unknown[] = []
    const bob = await fixtureAgent()
    const inbox = await make({ agentId: bob.id, limits: { perAddress: false } }, errors)
    const url = await serveWithoutAddress((request) => inbox.fetch(request))
    const alice = await fixtureAgent()
    const r = await postFrom(url, await signedMessage(alice, bob.id))
    expect(r?.status).toBe(202)
    expect(errors).toEqual([])
  })
})
