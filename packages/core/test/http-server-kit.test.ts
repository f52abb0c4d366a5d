/**
 * The server kit shared by the inbox and the relay (PROFILE §6): the Content-Type rule, client
 * addresses and their buckets, token buckets, the capped body reader, per-address read slots.
 */
import { describe, expect, it } from 'vitest'
import { AddressSet, addressBucket, clientAddress, ip16 as parseIp } from '../src/http/address.js'
import { readBody } from '../src/http/body.js'
import { ClientLimits, TokenBuckets } from '../src/http/client-limits.js'
import { isJsonContentType } from '../src/http/replies.js'

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

  it('charges stored bytes per IPv6 /48 (PROFILE §9), limits on or off, X-Forwarded-For from trusted proxies', () => {
    expect(addressBucket('2001:db8:1:2::1', 48)).toBe('2001:db8:1::/48')
    const limits = new ClientLimits({ perAddress: false, trustedProxies: ['10.0.0.0/8'] })
    const forwarded = () => '2001:db8:5:ff::9'
    expect(limits.storageBucket('2001:db8:5:1::1', forwarded)).toBe('2001:db8:5::/48')
    expect(limits.storageBucket('10.0.0.1', forwarded)).toBe('2001:db8:5::/48')
    expect(limits.storageBucket('192.0.2.1', forwarded)).toBe('192.0.2.1')
    expect(limits.storageBucket(undefined, forwarded)).toBeUndefined()
    expect(new ClientLimits().bucket('2001:db8:5:1::1', forwarded)).toBe('2001:db8:5:1::/64')
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
    expect(await readBody(stream, { maxBytes: 10_500 })).toBeUndefined()
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
    expect(await readBody(stream, { maxBytes: 3 })).toEqual(new Uint8Array([1, 2, 3]))
  })
})
