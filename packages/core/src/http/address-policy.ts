/**
 * Outbound address rules of PROFILE §4: requests built from peer data (identity documents, inbox
 * URLs, relay URLs, webhooks) go only to public unicast addresses, checked on the address
 * actually connected to. Isomorphic and pure: IP text parsing, CIDR matching, the public-unicast
 * test and an operator allow list. The Node client (`createNodeFetch`) applies it to sockets.
 *
 * Decisions, beyond PROFILE §4's list:
 * - Only canonical text is an address: dotted-quad IPv4 with decimal octets and no leading zeros
 *   (no `127.1`, `0x7f.0.0.1`, `017.0.0.1`), and RFC 4291 IPv6 text (compressed forms and an
 *   embedded dotted quad allowed). Anything else is not an address and never public.
 * - A zone id (`fe80::1%eth0`) is stripped for parsing and CIDR matching, but an address carrying
 *   one is never public unicast: zones exist only for scoped (non-global) addresses.
 * - IPv4 inside IPv6 is judged by the IPv4 address: IPv4-mapped `::ffff:0:0/96`, IPv4-translated
 *   `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96`; 6to4 `2002::/16` (its packets are tunnelled over
 *   IPv4 to the embedded address) and Teredo `2001::/32` (server and de-obfuscated client address).
 *   These refuse only when the embedded IPv4 address is itself refused.
 * - Refused outright, as non-public forms of IPv4: the deprecated IPv4-compatible block `::/96`
 *   (which contains `::` and `::1`) and the local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215),
 *   whose embedding position depends on a prefix length only its network knows.
 * - 255.255.255.255 is inside 240/4. Other special-purpose blocks (TEST-NETs, 198.18/15,
 *   192.0.0/24, the deprecated fec0::/10) are not in PROFILE §4's list and are not refused.
 *
 * @packageDocumentation
 */
import { AgentMsgError, isAgentMsgError } from '../errors.js'

/** A parsed IP address: 4 or 16 bytes in network order. */
export interface ParsedIp {
  version: 4 | 6
  bytes: Uint8Array
  /** The IPv6 zone id after `%`, when there was one (it is not part of `bytes`). */
  zone?: string
}

/** A parsed CIDR block. */
export interface Cidr {
  version: 4 | 6
  /** The network address (host bits zero). */
  bytes: Uint8Array
  /** Prefix length: 0–32 for IPv4, 0–128 for IPv6. */
  prefix: number
}

const V4_OCTET = /^(?:0|[1-9][0-9]{0,2})$/
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/
const ZONE = /^[0-9A-Za-z._~-]+$/

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.')
  if (parts.length !== 4) return undefined
  const bytes = new Uint8Array(4)
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!
    if (!V4_OCTET.test(p)) return undefined
    const n = Number(p)
    if (n > 255) return undefined
    bytes[i] = n
  }
  return bytes
}

function parseGroups(text: string): number[] | undefined {
  if (text === '') return []
  const groups: number[] = []
  for (const g of text.split(':')) {
    if (!HEX_GROUP.test(g)) return undefined
    groups.push(parseInt(g, 16))
  }
  return groups
}

function parseIpv6(text: string): Uint8Array | undefined {
  let body = text
  let tail: Uint8Array | undefined
  // An embedded dotted quad takes the place of the last two groups.
  const lastColon = body.lastIndexOf(':')
  if (lastColon < 0) return undefined
  if (body.includes('.', lastColon)) {
    tail = parseIpv4(body.slice(lastColon + 1))
    if (!tail) return undefined
    body = body.slice(0, lastColon + 1)
    // `::1.2.3.4` leaves `::`, `a:b:c:d:e:f:1.2.3.4` leaves `a:…:f:` whose trailing `:` we drop.
    if (!body.endsWith('::')) body = body.slice(0, -1)
  }
  const tailGroups = tail ? 2 : 0
  const halves = body.split('::')
  if (halves.length > 2) return undefined
  let groups: number[]
  if (halves.length === 2) {
    const left = parseGroups(halves[0]!)
    const right = parseGroups(halves[1]!)
    if (!left || !right) return undefined
    const missing = 8 - tailGroups - left.length - right.length
    if (missing < 1) return undefined
    groups = [...left, ...new Array<number>(missing).fill(0), ...right]
  } else {
    const all = parseGroups(body)
    if (!all || all.length !== 8 - tailGroups) return undefined
    groups = all
  }
  const bytes = new Uint8Array(16)
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8
    bytes[2 * i + 1] = g & 0xff
  })
  if (tail) bytes.set(tail, 12)
  return bytes
}

/**
 * Parse IPv4 (strict dotted quad) or IPv6 text (RFC 4291 forms, optional `%zone`). Brackets are
 * not accepted here. Returns `undefined` for anything else.
 *
 * @example
 * parseIp('::ffff:127.0.0.1') // { version: 6, bytes: [0,…,0xff,0xff,127,0,0,1] }
 */
export function parseIp(text: string): ParsedIp | undefined {
  if (typeof text !== 'string' || text.length > 100) return undefined
  if (!text.includes(':')) {
    const bytes = parseIpv4(text)
    return bytes ? { version: 4, bytes } : undefined
  }
  const pct = text.indexOf('%')
  let zone: string | undefined
  let addr = text
  if (pct >= 0) {
    zone = text.slice(pct + 1)
    addr = text.slice(0, pct)
    if (!ZONE.test(zone)) return undefined
  }
  const bytes = parseIpv6(addr)
  if (!bytes) return undefined
  return zone === undefined ? { version: 6, bytes } : { version: 6, bytes, zone }
}

/** Format an IP in canonical text (dotted quad, or RFC 5952 compressed IPv6 without zone). */
export function formatIp(ip: ParsedIp): string {
  const b = ip.bytes
  if (ip.version === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`
  const groups: number[] = []
  for (let i = 0; i < 8; i++) groups.push((b[2 * i]! << 8) | b[2 * i + 1]!)
  // Longest run of ≥ 2 zero groups, first one on ties (RFC 5952 §4.2).
  let best = -1
  let bestLen = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLen) {
      best = i
      bestLen = j - i
    }
    i = j
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':')
  if (best < 0) return hex(groups)
  return `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`
}

/**
 * Parse `address/prefix` (or a bare address: /32 or /128). Host bits must be zero.
 *
 * @throws TypeError with a message naming the problem.
 * @example
 * parseCidr('100.64.0.0/10') // { version: 4, bytes: [100,64,0,0], prefix: 10 }
 */
export function parseCidr(text: string): Cidr {
  if (typeof text !== 'string') throw new TypeError('CIDR must be a string')
  const slash = text.indexOf('/')
  const addrText = slash < 0 ? text : text.slice(0, slash)
  const ip = parseIp(addrText)
  if (!ip || ip.zone !== undefined)
    throw new TypeError(`${JSON.stringify(text)} is not an IP address or CIDR block`)
  const bits = ip.version === 4 ? 32 : 128
  let prefix = bits
  if (slash >= 0) {
    const p = text.slice(slash + 1)
    if (!/^(?:0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > bits) {
      throw new TypeError(`${JSON.stringify(text)}: prefix length must be 0–${bits}`)
    }
    prefix = Number(p)
  }
  const network = mask(ip.bytes, prefix)
  if (!sameBytes(network, ip.bytes)) {
    throw new TypeError(
      `${JSON.stringify(text)} has host bits set; did you mean ${formatIp({ version: ip.version, bytes: network })}/${prefix}?`,
    )
  }
  return { version: ip.version, bytes: network, prefix }
}

function mask(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = new Uint8Array(bytes.length)
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - 8 * i))
    out[i] = bytes[i]! & ((0xff << (8 - keep)) & 0xff)
  }
  return out
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

function inBlock(bytes: Uint8Array, block: Cidr): boolean {
  return bytes.length === block.bytes.length && sameBytes(mask(bytes, block.prefix), block.bytes)
}

/** Does `cidr` contain `ip`? An IPv4-mapped IPv6 address also matches IPv4 blocks. */
export function cidrContains(cidr: Cidr, ip: string | ParsedIp): boolean {
  const parsed = typeof ip === 'string' ? parseIp(ip) : ip
  if (!parsed) return false
  if (inBlock(parsed.bytes, cidr)) return true
  const v4 = unmapped(parsed.bytes)
  return v4 !== undefined && inBlock(v4, cidr)
}

const V4_REFUSED = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '224.0.0.0/4',
  '240.0.0.0/4',
].map(parseCidr)

const V6_REFUSED = [
  '::/96', // IPv4-compatible (deprecated), includes :: and ::1
  '64:ff9b:1::/48', // local-use NAT64 (RFC 8215)
  'fc00::/7',
  'fe80::/10',
  'ff00::/8',
].map(parseCidr)

const MAPPED = parseCidr('::ffff:0:0/96')
const TRANSLATED = parseCidr('::ffff:0:0:0/96')
const NAT64 = parseCidr('64:ff9b::/96')
const SIX_TO_FOUR = parseCidr('2002::/16')
const TEREDO = parseCidr('2001::/32')

/** The IPv4 address inside an IPv4-mapped IPv6 address, else undefined. */
function unmapped(bytes: Uint8Array): Uint8Array | undefined {
  return bytes.length === 16 && inBlock(bytes, MAPPED) ? bytes.slice(12) : undefined
}

function publicV4(bytes: Uint8Array): boolean {
  return !V4_REFUSED.some((block) => inBlock(bytes, block))
}

function publicV6(b: Uint8Array): boolean {
  if (V6_REFUSED.some((block) => inBlock(b, block))) return false
  if (inBlock(b, MAPPED) || inBlock(b, TRANSLATED) || inBlock(b, NAT64))
    return publicV4(b.slice(12))
  if (inBlock(b, SIX_TO_FOUR)) return publicV4(b.slice(2, 6))
  if (inBlock(b, TEREDO)) {
    const client = b.slice(12).map((x) => x ^ 0xff)
    return publicV4(b.slice(4, 8)) && publicV4(client)
  }
  return true
}

/**
 * True when `ip` is a public unicast address under PROFILE §4: not in 0/8, 10/8, 100.64/10,
 * 127/8, 169.254/16, 172.16/12, 192.168/16, 224/4, 240/4, ::, ::1, fc00::/7, fe80::/10, ff00::/8,
 * nor an IPv4-mapped/NAT64 (and 6to4, Teredo, IPv4-compatible) form of those. Text that is not
 * a canonical address, and any address with a zone id, is not public.
 *
 * @example
 * isPublicUnicast('93.184.216.34') // true
 * isPublicUnicast('::ffff:10.0.0.1') // false
 */
export function isPublicUnicast(ip: string): boolean {
  const parsed = parseIp(ip)
  if (!parsed || parsed.zone !== undefined) return false
  return parsed.version === 4 ? publicV4(parsed.bytes) : publicV6(parsed.bytes)
}

const BRAND = Symbol.for('agentmsg.address-refused')

/**
 * An outbound connection refused by the address policy. Its `code` is `forbidden`; a key that
 * cannot be fetched because of it is not found (PROFILE §4). Test with
 * {@link isAddressRefusedError}, which also looks through `cause` chains.
 */
export class AddressRefusedError extends AgentMsgError {
  /** The refused address. */
  readonly address: string
  /** The host name being connected to, when known. */
  readonly hostname: string | undefined
  readonly [BRAND] = true

  constructor(address: string, hostname?: string) {
    const host = hostname !== undefined && hostname !== address ? ` of host ${hostname}` : ''
    super(
      'forbidden',
      `address ${address}${host} is not public unicast (PROFILE §4); an operator may allow it explicitly`,
    )
    this.address = address
    this.hostname = hostname
  }
}

/** True when `e`, or an error in its `cause` chain, is an {@link AddressRefusedError}. */
export function isAddressRefusedError(e: unknown): e is AddressRefusedError {
  for (let cur = e, depth = 0; cur && typeof cur === 'object' && depth < 8; depth++) {
    if ((cur as Record<symbol, unknown>)[BRAND] === true && isAgentMsgError(cur)) return true
    cur = (cur as { cause?: unknown }).cause
  }
  return false
}

/** Decides which outbound addresses may be connected to. */
export interface AddressPolicy {
  /** True when connecting to `ip` (for `hostname`, if known) is allowed. */
  allowsAddress(ip: string, hostname?: string): boolean
  /** @throws AddressRefusedError when {@link AddressPolicy.allowsAddress} is false. */
  assertAddress(ip: string, hostname?: string): void
}

/** Options for {@link createAddressPolicy}. */
export interface AddressPolicyOptions {
  /**
   * What an operator explicitly allows besides public unicast: IP addresses, CIDR blocks and host
   * names (`localhost`, or `*.internal.example` for any subdomain). A named host is allowed on
   * whatever address it resolves to.
   *
   * @example ['127.0.0.1/32', '::1', 'localhost']
   */
  allow?: string[]
}

const HOST_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/

function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase()
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1)
  if (h.endsWith('.')) h = h.slice(0, -1)
  return h
}

/**
 * The outbound address policy: public unicast only, plus what `allow` names. Matching is on the
 * address actually connected to; host names in `allow` are compared case-insensitively, without
 * a trailing dot.
 *
 * @throws TypeError when an `allow` entry is neither an address, a CIDR block nor a host name.
 * @example
 * const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
 * policy.allowsAddress('127.0.0.1') // true
 * policy.assertAddress('10.0.0.1', 'x.example') // throws: address 10.0.0.1 of host x.example is not public unicast…
 */
export function createAddressPolicy(options: AddressPolicyOptions = {}): AddressPolicy {
  const blocks: Cidr[] = []
  const hosts = new Set<string>()
  const suffixes: string[] = []
  for (const entry of options.allow ?? []) {
    if (typeof entry !== 'string') throw new TypeError('allow entries must be strings')
    const e = normalizeHost(entry)
    if (e.includes('/') || parseIp(e)) {
      blocks.push(parseCidr(e))
      continue
    }
    const wildcard = e.startsWith('*.')
    const name = wildcard ? e.slice(2) : e
    if (name === '' || !name.split('.').every((l) => HOST_LABEL.test(l))) {
      throw new TypeError(
        `allow entry ${JSON.stringify(entry)} is not an IP address, CIDR block or host name`,
      )
    }
    if (wildcard) suffixes.push(`.${name}`)
    else hosts.add(name)
  }

  const allowsAddress = (ip: string, hostname?: string): boolean => {
    if (hostname !== undefined && (hosts.size > 0 || suffixes.length > 0)) {
      const h = normalizeHost(hostname)
      if (hosts.has(h) || suffixes.some((s) => h.endsWith(s))) return true
    }
    const text = normalizeHost(ip)
    if (isPublicUnicast(text)) return true
    if (blocks.length === 0) return false
    const parsed = parseIp(text)
    return parsed !== undefined && blocks.some((b) => cidrContains(b, parsed))
  }

  return {
    allowsAddress,
    assertAddress(ip, hostname) {
      if (!allowsAddress(ip, hostname)) throw new AddressRefusedError(ip, hostname)
    },
  }
}
