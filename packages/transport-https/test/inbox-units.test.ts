/** The inbox's building blocks, and the handler called directly (no server), as hono's app.request(). */

import { didKeyResolver } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { AddressSet, addressBucket, clientAddress, parseIp } from '../src/inbox/address.js'
import { readLimited } from '../src/inbox/body.js'
import { isJsonContentType } from '../src/inbox/content-type.js'
import { createInboxHandler } from '../src/inbox/handler.js'
import { TokenBuckets } from '../src/inbox/rate-limit.js'
import type { InboxHandlerOptions } from '../src/inbox/types.js'
import { INBOX_PATH } from './inbox-helpers.js'

describe('Content-Type (PROFILE §6)', () => {
  it.each([
    'application/json',
    'APPLICATION/JSON',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'application/json ; charset="utf-8"',
    'application/json\t;\tCharset="UTF-8"\t',
    'Application/Json; CHARSET=Utf-8',
    'application/json; charset="utf\\-8"',
  ])('accepts %j', (value) => expect(isJsonContentType(value)).toBe(true))

  it.each([
    null,
    '',
    'text/plain',
    'application/jsonx',
    'application/ld+json',
    'application/json; charset=latin1',
    'application/json; charset="latin1"',
    'application/json; charset=utf-16',
    'application/json; charset=utf-8; q=1',
    'application/json; foo=bar',
    'application/json;',
    'application/json; charset = utf-8',
    'application/json, text/plain',
    'application/json; charset="utf-8',
  ])('refuses %j', (value) => expect(isJsonContentType(value)).toBe(false))
})

describe('addresses', () => {
  it('parses IPv4, IPv6 and IPv4-mapped addresses', () => {
    expect(parseIp('1.2.3.4')).toEqual(parseIp('::ffff:1.2.3.4'))
    expect(parseIp('[2001:db8::1]')).toEqual(parseIp('2001:0db8:0:0:0:0:0:1'))
    expect(parseIp('fe80::1%eth0')).toEqual(parseIp('fe80::1'))
    for (const bad of [
      '1.2.3',
      '1.2.3.256',
      '01.2.3.4',
      '1::2::3',
      ':1:2',
      'x',
      '1:2:3:4:5:6:7:8:9',
    ]) {
      expect(parseIp(bad), bad).toBeUndefined()
    }
  })

  it('buckets IPv6 per /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressBucket('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64')
    expect(addressBucket('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64')
    expect(addressBucket('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64')
    expect(addressBucket('::ffff:127.0.0.1')).toBe('127.0.0.1')
    expect(addressBucket('127.0.0.1')).toBe('127.0.0.1')
  })

  it('believes X-Forwarded-For only from trusted proxies, right to left', () => {
    const trusted = new AddressSet(['10.0.0.0/8', 'fd00::/8', '192.0.2.7'])
    expect(trusted.has('10.200.0.1')).toBe(true)
    expect(trusted.has('::ffff:10.0.0.1')).toBe(true)
    expect(trusted.has('11.0.0.1')).toBe(false)
    expect(trusted.has('fd12::1')).toBe(true)
    expect(trusted.has('192.0.2.8')).toBe(false)
    expect(clientAddress('10.0.0.1', '1.2.3.4', trusted)).toBe('1.2.3.4')
    // The client wrote the left-most entry itself; the proxy's own entry is the right-most.
    expect(clientAddress('10.0.0.1', '6.6.6.6, 1.2.3.4', trusted)).toBe('1.2.3.4')
    expect(clientAddress('10.0.0.1', '1.2.3.4, 10.0.0.9', trusted)).toBe('1.2.3.4')
    expect(clientAddress('5.6.7.8', '1.2.3.4', trusted)).toBe('5.6.7.8')
    expect(clientAddress('10.0.0.1', null, trusted)).toBe('10.0.0.1')
    expect(clientAddress('10.0.0.1', 'garbage', trusted)).toBe('10.0.0.1')
    expect(() => new AddressSet(['10.0.0.0/33'])).toThrow(TypeError)
  })
})

describe('token buckets', () => {
  it('allows the burst, then answers the whole seconds until the next token', () => {
    let now = 0
    const buckets = new TokenBuckets({ perMinute: 6, burst: 2 }, () => now)
    expect(buckets.take('a')).toBe(0)
    expect(buckets.take('a')).toBe(0)
    expect(buckets.take('a')).toBe(10)
    expect(buckets.take('b')).toBe(0)
    now += 9_000
    expect(buckets.take('a')).toBe(1)
    now += 1_000
    expect(buckets.take('a')).toBe(0)
  })

  it('keeps at most maxKeys buckets', () => {
    const buckets = new TokenBuckets({ perMinute: 60, burst: 1 }, () => 0, 100)
    for (let i = 0; i < 1000; i++) buckets.take(`k${i}`)
    expect(buckets.size).toBe(100)
  })
})

describe('body reading', () => {
  it('stops and cancels the stream once past the limit', async () => {
    let pulled = 0
    let cancelled = false
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++
        c.enqueue(new Uint8Array(1000))
      },
      cancel() {
        cancelled = true
      },
    })
    expect(await readLimited(stream, 10_500)).toBeUndefined()
    expect(cancelled).toBe(true)
    expect(pulled).toBeLessThan(15)
  })

  it('joins chunks up to the limit', async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array([1, 2]))
        c.enqueue(new Uint8Array([3]))
        c.close()
      },
    })
    expect(await readLimited(stream, 3)).toEqual(new Uint8Array([1, 2, 3]))
  })
})

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
