/** The inbox's building blocks, and the handler called directly (no server), as hono's app.request(). */

import { didKeyResolver } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { createInboxHandler } from '../src/inbox/handler.js'
import type { InboxHandlerOptions } from '../src/inbox/types.js'
import { INBOX_PATH } from './inbox-helpers.js'

describe('handler called directly', () => {
  const origin = 'https://bob.example'
  const make = (o: Partial<InboxHandlerOptions> = {}) =>
    createInboxHandler({
      agentId: 'bob',
      resolver: didKeyResolver(),
      onMessage: async () => undefined,
      onError: () => undefined,
      ...o,
    })
  // A POST that passes the address limit and stops at the Content-Type check (415), so 429
  // shows the limiter refused it.
  const probe = (h: ReturnType<typeof make>, clientAddress: string, xff?: string) =>
    h
      .fetch(
        new Request(origin + INBOX_PATH, {
          method: 'POST',
          headers: { 'content-type': 'text/plain', ...(xff ? { 'x-forwarded-for': xff } : {}) },
          body: 'x',
        }),
        { clientAddress },
      )
      .then((r) => r.status)

  it('limits IPv6 clients per /64', async () => {
    const h = make({ limits: { perAddress: { perMinute: 60, burst: 1 } } })
    expect(await probe(h, '2001:db8:1:2::1')).toBe(415)
    expect(await probe(h, '2001:db8:1:2:abcd::7')).toBe(429)
    expect(await probe(h, '2001:db8:1:3::1')).toBe(415)
  })

  it('limits by X-Forwarded-For only behind a trusted proxy', async () => {
    const h = make({
      trustedProxies: ['10.0.0.0/8'],
      limits: { perAddress: { perMinute: 60, burst: 1 } },
    })
    expect(await probe(h, '10.0.0.1', '1.1.1.1')).toBe(415)
    expect(await probe(h, '10.0.0.1', '2.2.2.2')).toBe(415)
    expect(await probe(h, '10.0.0.2', '1.1.1.1')).toBe(429)
    // An untrusted peer's header is ignored: its own address is the bucket.
    expect(await probe(h, '5.5.5.5', '3.3.3.3')).toBe(415)
    expect(await probe(h, '5.5.5.5', '4.4.4.4')).toBe(429)
  })

  it('fetch works unbound, as frameworks call it (app.mount("/", inbox.fetch))', async () => {
    const { fetch } = make()
    const r = await fetch(new Request(origin + INBOX_PATH, { method: 'OPTIONS' }))
    expect(r.status).toBe(204)
    expect(r.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('mounts under a base path', async () => {
    const h = make({ basePath: '/agents/bob/' })
    const at = (path: string) =>
      h.fetch(new Request(origin + path, { method: 'OPTIONS' })).then((r) => r.status)
    expect(await at('/agents/bob' + INBOX_PATH)).toBe(204)
    expect(await at(INBOX_PATH)).toBe(404)
  })

  it('bounds the bodies being received at once (503 before reading)', async () => {
    const h = make({ limits: { maxConcurrentReads: 1 } })
    let end!: () => void
    const slow = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{'))
        end = () => c.close()
      },
    })
    const post = (body: BodyInit) =>
      h.fetch(
        new Request(origin + INBOX_PATH, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          duplex: 'half',
        } as RequestInit),
        { clientAddress: '1.2.3.4' },
      )
    const first = post(slow)
    await new Promise((r) => setTimeout(r, 10))
    const second = await post('{}')
    expect(second.status).toBe(503)
    expect(second.headers.get('retry-after')).toBe('1')
    end()
    expect((await first).status).toBe(400)
    expect((await post('{}')).status).toBe(400)
  })

  it('refuses new messages after close', async () => {
    const h = make()
    await h.close()
    const r = await h.fetch(
      new Request(origin + INBOX_PATH, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }),
      { clientAddress: '1.2.3.4' },
    )
    expect(r.status).toBe(503)
    expect(r.headers.get('retry-after')).toBe('5')
  })
})
