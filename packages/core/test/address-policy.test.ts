import { describe, expect, it } from 'vitest'
import { isAgentMsgError } from '../src/errors.js'
import { cidrContains, formatIp, parseCidr, parseIp } from '../src/http/address.js'
import {
  AddressRefusedError,
  createAddressPolicy,
  isAddressRefusedError,
  isPublicUnicast,
} from '../src/http/address-policy.js'

const v4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
const v4int = (s: string) => s.split('.').reduce((acc, o) => acc * 256 + Number(o), 0)

describe('parseIp', () => {
  it('parses canonical IPv4 only', () => {
    expect(parseIp('192.0.2.1')).toEqual({ version: 4, bytes: new Uint8Array([192, 0, 2, 1]) })
    expect(parseIp('0.0.0.0')?.bytes).toEqual(new Uint8Array(4))
    expect(parseIp('255.255.255.255')?.bytes).toEqual(new Uint8Array([255, 255, 255, 255]))
    for (const bad of [
      '127.1',
      '0x7f.0.0.1',
      '0177.0.0.1',
      '01.2.3.4',
      '8.8.8.08',
      '2130706433',
      '256.0.0.1',
      '1.2.3.4.5',
      '1.2.3.',
      ' 1.2.3.4',
      '1.2.3.4 ',
      '1.2.3.4%eth0',
      '',
      'localhost',
    ]) {
      expect(parseIp(bad), bad).toBeUndefined()
    }
  })

  it('parses IPv6, compressed, with embedded IPv4, any case', () => {
    const full = parseIp('2001:0db8:0000:0000:0000:0000:0000:0001')
    expect(parseIp('2001:db8::1')).toEqual(full)
    expect(parseIp('2001:DB8::1')).toEqual(full)
    expect(parseIp('::')?.bytes).toEqual(new Uint8Array(16))
    expect(parseIp('::1')?.bytes).toEqual(new Uint8Array([...new Array(15).fill(0), 1]))
    expect(parseIp('1::')?.bytes[1]).toBe(1)
    expect(parseIp('1:2:3:4:5:6:7::')?.bytes[13]).toBe(7)
    expect(parseIp('::2:3:4:5:6:7:8')?.bytes[15]).toBe(8)
    expect(parseIp('::ffff:127.0.0.1')).toEqual(parseIp('::ffff:7f00:1'))
    expect(parseIp('0:0:0:0:0:ffff:127.0.0.1')).toEqual(parseIp('::ffff:7f00:1'))
    expect(parseIp('::127.0.0.1')).toEqual(parseIp('::7f00:1'))
    expect(parseIp('64:ff9b::192.0.2.33')).toEqual(parseIp('64:ff9b::c000:221'))
    for (const bad of [
      '1::2::3',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7:8::',
      '1:2:3:4:5:6:7',
      ':1::',
      '1::2:',
      ':::',
      '12345::',
      'g::',
      '[::1]',
      '::ffff:127.0.0',
      '::ffff:127.0.0.1:1',
      '1:2:3:4:5:6:7:1.2.3.4',
      'fe80::1%',
      'fe80::1%a b',
    ]) {
      expect(parseIp(bad), bad).toBeUndefined()
    }
  })

  it('strips a zone id, keeping it aside', () => {
    expect(parseIp('fe80::1%eth0')).toEqual({ ...parseIp('fe80::1')!, zone: 'eth0' })
  })

  it('formats canonically (RFC 5952)', () => {
    for (const [input, out] of [
      ['2001:0db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['0:0:0:0:0:0:0:0', '::'],
      ['0:0:0:0:0:0:0:1', '::1'],
      ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'],
      ['10.0.0.1', '10.0.0.1'],
    ] as const) {
      expect(formatIp(parseIp(input)!)).toBe(out)
    }
  })
})

describe('parseCidr / cidrContains', () => {
  it('parses blocks and bare addresses', () => {
    expect(parseCidr('100.64.0.0/10')).toEqual({
      version: 4,
      bytes: new Uint8Array([100, 64, 0, 0]),
      prefix: 10,
    })
    expect(parseCidr('127.0.0.1').prefix).toBe(32)
    expect(parseCidr('::1').prefix).toBe(128)
    expect(parseCidr('0.0.0.0/0').prefix).toBe(0)
    expect(parseCidr('fc00::/7').version).toBe(6)
  })

  it('refuses malformed blocks and set host bits, with a suggestion', () => {
    expect(() => parseCidr('127.0.0.1/8')).toThrow(/host bits set; did you mean 127\.0\.0\.0\/8/)
    expect(() => parseCidr('fe80::1/10')).toThrow(/did you mean fe80::\/10/)
    for (const bad of [
      '10.0.0.0/33',
      '::/129',
      '10.0.0.0/08',
      '10.0.0.0/',
      '/8',
      'x/8',
      'fe80::%eth0/10',
    ]) {
      expect(() => parseCidr(bad), bad).toThrow(TypeError)
    }
  })

  it('matches addresses, IPv4-mapped ones against IPv4 blocks too', () => {
    const b = parseCidr('172.16.0.0/12')
    expect(cidrContains(b, '172.16.0.0')).toBe(true)
    expect(cidrContains(b, '172.31.255.255')).toBe(true)
    expect(cidrContains(b, '172.32.0.0')).toBe(false)
    expect(cidrContains(b, '172.15.255.255')).toBe(false)
    expect(cidrContains(b, '::ffff:172.20.1.1')).toBe(true)
    expect(cidrContains(b, 'not an ip')).toBe(false)
    expect(cidrContains(parseCidr('0.0.0.0/0'), '8.8.8.8')).toBe(true)
    expect(cidrContains(parseCidr('0.0.0.0/0'), '2001:db8::1')).toBe(false)
  })
})

describe('isPublicUnicast', () => {
  // PROFILE §4's IPv4 list: each block's first and last address is refused; the addresses just
  // outside are public unless they fall in a neighbouring refused block.
  const v4Blocks: Array<[string, string, string]> = [
    ['0.0.0.0/8', '0.0.0.0', '0.255.255.255'],
    ['10.0.0.0/8', '10.0.0.0', '10.255.255.255'],
    ['100.64.0.0/10', '100.64.0.0', '100.127.255.255'],
    ['127.0.0.0/8', '127.0.0.0', '127.255.255.255'],
    ['169.254.0.0/16', '169.254.0.0', '169.254.255.255'],
    ['172.16.0.0/12', '172.16.0.0', '172.31.255.255'],
    ['192.168.0.0/16', '192.168.0.0', '192.168.255.255'],
    ['224.0.0.0/4', '224.0.0.0', '239.255.255.255'],
    ['240.0.0.0/4', '240.0.0.0', '255.255.255.255'],
  ]
  const refusedV4 = (ip: string) => v4Blocks.some(([cidr]) => cidrContains(parseCidr(cidr), ip))

  for (const [cidr, first, last] of v4Blocks) {
    it(`refuses ${cidr} from ${first} to ${last}, and its IPv4-mapped and NAT64 forms`, () => {
      for (const ip of [first, last]) {
        expect(isPublicUnicast(ip), ip).toBe(false)
        expect(isPublicUnicast(`::ffff:${ip}`), `::ffff:${ip}`).toBe(false)
        expect(isPublicUnicast(`64:ff9b::${ip}`), `64:ff9b::${ip}`).toBe(false)
        expect(isPublicUnicast(`::ffff:0:${ip}`), `::ffff:0:${ip}`).toBe(false)
      }
      const before = v4int(first) - 1
      const after = v4int(last) + 1
      for (const n of [before, after]) {
        if (n < 0 || n > 0xffffffff) continue
        const ip = v4(n)
        expect(isPublicUnicast(ip), ip).toBe(!refusedV4(ip))
        expect(isPublicUnicast(`::ffff:${ip}`), `::ffff:${ip}`).toBe(!refusedV4(ip))
        expect(isPublicUnicast(`64:ff9b::${ip}`), `64:ff9b::${ip}`).toBe(!refusedV4(ip))
      }
    })
  }

  it('knows the addresses just outside the IPv4 blocks are public', () => {
    for (const ip of [
      '1.0.0.0',
      '9.255.255.255',
      '11.0.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '126.255.255.255',
      '128.0.0.0',
      '169.253.255.255',
      '169.255.0.0',
      '172.15.255.255',
      '172.32.0.0',
      '192.167.255.255',
      '192.169.0.0',
      '223.255.255.255',
      '8.8.8.8',
      '93.184.216.34',
    ]) {
      expect(isPublicUnicast(ip), ip).toBe(true)
    }
  })

  it('refuses ::, ::1 and the IPv6 blocks at their edges', () => {
    const cases: Array<[string, boolean]> = [
      ['::', false],
      ['::1', false],
      // fc00::/7
      ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
      ['fc00::', false],
      ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
      ['fe00::', true],
      // fe80::/10
      ['fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
      ['fe80::', false],
      ['FE80::1', false],
      ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
      ['fec0::', true], // deprecated site-local: not in PROFILE §4's list
      // ff00::/8
      ['feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
      ['ff00::', false],
      ['ff02::1', false],
      ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
      // ordinary global unicast
      ['2606:4700:4700::1111', true],
      ['2a00:1450:4001:80b::200e', true],
    ]
    for (const [ip, pub] of cases) expect(isPublicUnicast(ip), ip).toBe(pub)
  })

  it('judges IPv4 embedded in IPv6 by the IPv4 address', () => {
    const cases: Array<[string, boolean]> = [
      // IPv4-mapped, in both notations
      ['::ffff:127.0.0.1', false],
      ['::ffff:7f00:1', false],
      ['0:0:0:0:0:ffff:a00:1', false],
      ['::ffff:8.8.8.8', true],
      ['::ffff:808:808', true],
      // NAT64 well-known prefix (RFC 6052)
      ['64:ff9b::7f00:1', false],
      ['64:ff9b::a9fe:a9fe', false], // 169.254.169.254, the cloud metadata address
      ['64:ff9b::808:808', true],
      // local-use NAT64 (RFC 8215): refused whole
      ['64:ff9b:1::808:808', false],
      ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', false],
      // IPv4-compatible ::/96 (deprecated): refused whole, up to its last address
      ['::8.8.8.8', false],
      ['::ffff:ffff', false],
      ['::1:0:0', true], // just past ::/96 and before ::ffff:0:0/96
      // 6to4: 2002:AABB:CCDD::/48 tunnels to AA.BB.CC.DD
      ['2002:7f00:1::1', false],
      ['2002:c0a8:101::', false],
      ['2002:808:808::1', true],
      // Teredo: server at bits 32–63, client obfuscated (inverted) at bits 96–127
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true], // RFC 4380's example
      ['2001:0:4136:e378:8000:63bf:80ff:fffe', false], // client 127.0.0.1
      ['2001:0:a00:1:8000:63bf:3fff:fdd2', false], // server 10.0.0.1
      ['2001:1::1', true], // outside 2001::/32
    ]
    for (const [ip, pub] of cases) expect(isPublicUnicast(ip), ip).toBe(pub)
  })

  it('refuses zone ids, non-canonical text and junk', () => {
    for (const ip of [
      'fe80::1%eth0',
      '2606:4700:4700::1111%1',
      '127.1',
      '0x7f000001',
      '8.8.8.08',
      '[2606:4700:4700::1111]',
      'example.com',
      '',
    ]) {
      expect(isPublicUnicast(ip), ip).toBe(false)
    }
  })
})

describe('createAddressPolicy', () => {
  it('allows public unicast only, by default', () => {
    const p = createAddressPolicy()
    expect(p.allowsAddress('8.8.8.8')).toBe(true)
    expect(p.allowsAddress('2606:4700:4700::1111', 'one.one.one.one')).toBe(true)
    expect(p.allowsAddress('127.0.0.1')).toBe(false)
    expect(p.allowsAddress('127.0.0.1', 'localhost')).toBe(false)
    expect(p.allowsAddress('::ffff:10.1.2.3', 'x.example')).toBe(false)
  })

  it('throws a clear AddressRefusedError', () => {
    const p = createAddressPolicy()
    let err: unknown
    try {
      p.assertAddress('10.0.0.1', 'x.example')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(AddressRefusedError)
    expect(isAgentMsgError(err)).toBe(true)
    const e = err as AddressRefusedError
    expect(e.code).toBe('forbidden')
    expect(e.address).toBe('10.0.0.1')
    expect(e.hostname).toBe('x.example')
    expect(e.message).toMatch(
      /^address 10\.0\.0\.1 of host x\.example is not public unicast \(PROFILE §4\)/,
    )
    expect(() => p.assertAddress('8.8.8.8', 'dns.google')).not.toThrow()
    expect(isAddressRefusedError(err)).toBe(true)
    expect(isAddressRefusedError(new TypeError('fetch failed', { cause: err }))).toBe(true)
    expect(isAddressRefusedError(new Error('other'))).toBe(false)
    expect(isAddressRefusedError(undefined)).toBe(false)
  })

  it('allows what the operator lists: addresses, blocks, host names', () => {
    const p = createAddressPolicy({
      allow: ['127.0.0.1', '10.8.0.0/16', '[::1]', 'LocalHost', '*.internal.example'],
    })
    expect(p.allowsAddress('127.0.0.1')).toBe(true)
    expect(p.allowsAddress('::ffff:127.0.0.1')).toBe(true)
    expect(p.allowsAddress('127.0.0.2')).toBe(false)
    expect(p.allowsAddress('10.8.255.255')).toBe(true)
    expect(p.allowsAddress('10.9.0.0')).toBe(false)
    expect(p.allowsAddress('::1')).toBe(true)
    expect(p.allowsAddress('[::1]')).toBe(true)
    // A named host is allowed on whatever address it resolves to.
    expect(p.allowsAddress('192.168.1.5', 'localhost')).toBe(true)
    expect(p.allowsAddress('192.168.1.5', 'LOCALHOST.')).toBe(true)
    expect(p.allowsAddress('192.168.1.5', 'db.internal.example')).toBe(true)
    expect(p.allowsAddress('192.168.1.5', 'internal.example')).toBe(false)
    expect(p.allowsAddress('192.168.1.5', 'evilinternal.example')).toBe(false)
    expect(p.allowsAddress('192.168.1.5', 'other.example')).toBe(false)
    // Public unicast stays allowed.
    expect(p.allowsAddress('8.8.8.8', 'dns.google')).toBe(true)
  })

  it('refuses allow entries it cannot understand', () => {
    for (const bad of ['10.0.0.1/8', '300.0.0.0/8', 'not a host', '-x.example', '*.', '']) {
      expect(() => createAddressPolicy({ allow: [bad] }), bad).toThrow(TypeError)
    }
  })
})
