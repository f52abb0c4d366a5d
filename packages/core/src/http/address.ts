/**
 * IP address text and CIDR blocks, and the client address of a request (PROFILE §4, §6). Only
 * canonical text is an address: dotted-quad IPv4 with decimal octets and no leading zeros (no
 * `127.1`, `0x7f.0.0.1`, `017.0.0.1`), and RFC 4291 IPv6 text (an embedded dotted quad allowed).
 */
import { constantTimeEqual } from '../bytes.js'
import { PROFILE } from '../profile.js'

/** A parsed IP address: 4 or 16 bytes in network order, and an IPv6 `%zone` apart. */
export type ParsedIp = { version: 4 | 6; bytes: Uint8Array; zone?: string }
/** A CIDR block: its network address (host bits zero) and prefix length. */
export type Cidr = { version: 4 | 6; bytes: Uint8Array; prefix: number }

const DECIMAL = /^(?:0|[1-9][0-9]{0,2})$/
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/
const ZONE = /^[0-9A-Za-z._~-]+$/

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.')
  if (parts.length !== 4 || !parts.every((p) => DECIMAL.test(p) && Number(p) < 256)) return
  return new Uint8Array(parts.map(Number))
}

function parseGroups(text: string): number[] | undefined {
  const groups = text === '' ? [] : text.split(':')
  return groups.every((g) => HEX_GROUP.test(g)) ? groups.map((g) => parseInt(g, 16)) : undefined
}

function parseIpv6(text: string): Uint8Array | undefined {
  // An embedded dotted quad stands for the last two groups.
  const at = text.lastIndexOf(':')
  const v4 = text.includes('.', at) ? parseIpv4(text.slice(at + 1)) : new Uint8Array(0)
  if (at < 0 || !v4) return undefined
  const group = (i: number) => ((v4[i]! << 8) | v4[i + 1]!).toString(16)
  const halves = (v4.length ? `${text.slice(0, at + 1)}${group(0)}:${group(2)}` : text).split('::')
  const left = parseGroups(halves[0]!)
  const right = halves.length === 2 ? parseGroups(halves[1]!) : []
  const missing = 8 - (left?.length ?? 9) - (right?.length ?? 9)
  if (halves.length > 2 || (halves.length === 2 ? missing < 1 : missing !== 0)) return undefined
  const groups = [...left!, ...new Array<number>(missing).fill(0), ...right!]
  return new Uint8Array(groups.flatMap((g) => [g >> 8, g & 0xff]))
}

/**
 * Parse IPv4 (strict dotted quad) or IPv6 text (RFC 4291 forms, optional `%zone`; no brackets),
 * else `undefined`.
 * @example
 * parseIp('::ffff:127.0.0.1') // { version: 6, bytes: [0,…,0xff,0xff,127,0,0,1] }
 */
export function parseIp(text: string): ParsedIp | undefined {
  if (typeof text !== 'string' || text.length > 100) return undefined
  const [addr, zone, ...more] = text.split('%')
  const v4 = !text.includes(':')
  if (more.length > 0 || (zone !== undefined && (v4 || !ZONE.test(zone)))) return undefined
  const bytes = v4 ? parseIpv4(addr!) : parseIpv6(addr!)
  if (!bytes) return undefined
  return { version: v4 ? 4 : 6, bytes, ...(zone === undefined ? {} : { zone }) }
}

/** Format an IP in canonical text (dotted quad, or RFC 5952 compressed IPv6 without zone). */
export function formatIp(ip: ParsedIp): string {
  const b = ip.bytes
  if (ip.version === 4) return b.join('.')
  const full = `:${[0, 2, 4, 6, 8, 10, 12, 14].map((i) => ((b[i]! << 8) | b[i + 1]!).toString(16)).join(':')}:`
  // The longest run of two or more zero groups, the first one on ties (RFC 5952 §4.2).
  let run = ''
  for (const [, zeros] of full.matchAll(/:(0(?::0)+)(?=:)/g))
    if (zeros!.length > run.length) run = zeros!
  const text = run ? full.replace(`:${run}:`, '::') : full
  return text.replace(/^:(?!:)|(?<!:):$/g, '')
}

/**
 * Parse `address/prefix` (or a bare address: /32 or /128). Host bits must be zero.
 * @throws TypeError with a message naming the problem.
 * @example
 * parseCidr('100.64.0.0/10') // { version: 4, bytes: [100,64,0,0], prefix: 10 }
 */
export function parseCidr(text: string): Cidr {
  const [addrText, p, ...more] = String(text).split('/')
  const ip = parseIp(addrText!)
  if (!ip || ip.zone !== undefined || more.length > 0)
    throw new TypeError(`${JSON.stringify(text)} is not an IP address or CIDR block`)
  const bits = ip.version === 4 ? 32 : 128
  if (p !== undefined && !(DECIMAL.test(p) && Number(p) <= bits)) {
    throw new TypeError(`${JSON.stringify(text)}: prefix length must be 0–${bits}`)
  }
  const prefix = p === undefined ? bits : Number(p)
  const network = mask(ip.bytes, prefix)
  if (!constantTimeEqual(network, ip.bytes)) {
    const fixed = formatIp({ version: ip.version, bytes: network })
    throw new TypeError(
      `${JSON.stringify(text)} has host bits set; did you mean ${fixed}/${prefix}?`,
    )
  }
  return { version: ip.version, bytes: network, prefix }
}

const mask = (bytes: Uint8Array, prefix: number): Uint8Array =>
  bytes.map((b, i) => b & ((0xff << (8 - Math.max(0, Math.min(8, prefix - 8 * i)))) & 0xff))

/** True when `bytes` (of the block's length) lie in `block`. */
export const inBlock = (bytes: Uint8Array, block: Cidr): boolean =>
  bytes.length === block.bytes.length && constantTimeEqual(mask(bytes, block.prefix), block.bytes)

/** Does `cidr` contain `ip`? An IPv4-mapped IPv6 address also matches IPv4 blocks. */
export function cidrContains(cidr: Cidr, ip: string | ParsedIp): boolean {
  const parsed = typeof ip === 'string' ? parseIp(ip) : ip
  if (!parsed) return false
  const v4 = unmapped(parsed.bytes)
  return inBlock(parsed.bytes, cidr) || (v4 !== undefined && inBlock(v4, cidr))
}

/** The IPv4 address inside an IPv4-mapped IPv6 address, else undefined. */
export function unmapped(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length !== 16 || bytes[10] !== 0xff || bytes[11] !== 0xff) return undefined
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return undefined
  return bytes.slice(12)
}

/** An address as 16 bytes (IPv4 as `::ffff:a.b.c.d`); brackets and a zone id dropped. */
export function ip16(text: string): Uint8Array | undefined {
  const bare = text.trim()
  const ip = parseIp(bare.startsWith('[') && bare.endsWith(']') ? bare.slice(1, -1) : bare)
  return ip?.version === 4
    ? new Uint8Array([...new Array(10).fill(0), 255, 255, ...ip.bytes])
    : ip?.bytes
}

/**
 * The bucket of an address: IPv4 itself, IPv6 its /64 (`2001:db8:1:2::/64`; `bits` 48 for the
 * storage charge of PROFILE §9), so one host cannot dodge a limit by walking its own prefix;
 * other text is its own bucket.
 */
export function addressBucket(address: string, bits: number = PROFILE.ipv6BucketBits): string {
  const b = ip16(address)
  if (!b) return address.toLowerCase()
  const v4 = unmapped(b)
  if (v4) return v4.join('.')
  // The prefix's groups spelled out (`0:0:0:0::/64` for `::1`), as the logs have always shown it.
  const groups: string[] = []
  for (let i = 0; i < bits / 8; i += 2) groups.push(((b[i]! << 8) | b[i + 1]!).toString(16))
  return `${groups.join(':')}::/${bits}`
}

/** A set of addresses and CIDR ranges (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`). */
export class AddressSet {
  readonly #ranges: Cidr[] = []

  constructor(entries: readonly string[] = []) {
    for (const entry of entries) {
      const [text, p, ...more] = entry.split('/')
      const ip = ip16(text!)
      if (!ip) throw new TypeError(`not an IP address or CIDR range: ${JSON.stringify(entry)}`)
      const bits = text!.includes(':') ? 128 : 32
      const n = p === undefined ? bits : /^[0-9]{1,3}$/.test(p) && !more.length ? Number(p) : NaN
      if (!(n <= bits)) throw new TypeError(`bad prefix length in ${JSON.stringify(entry)}`)
      const prefix = 128 - bits + n
      this.#ranges.push({ version: 6, bytes: mask(ip, prefix), prefix })
    }
  }

  /** How many addresses and ranges it holds. */
  get size(): number {
    return this.#ranges.length
  }

  /** True when `address` falls in one of the ranges. */
  has(address: string): boolean {
    const ip = this.#ranges.length > 0 ? ip16(address) : undefined
    return ip !== undefined && this.#ranges.some((range) => inBlock(ip, range))
  }
}

/**
 * The client's address: the connection's peer, or — only when that peer is a trusted proxy —
 * the right-most `X-Forwarded-For` entry that is not itself a trusted proxy (entries further
 * left were written by the client and prove nothing).
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | null,
  trusted: AddressSet,
): string {
  const direct = peer ?? 'unknown'
  if (forwardedFor === null || peer === undefined || !trusted.has(peer)) return direct
  const hops = forwardedFor.split(',').map((hop) => hop.trim())
  for (const hop of hops.reverse()) {
    if (!ip16(hop)) return direct
    if (!trusted.has(hop)) return hop
  }
  return hops.at(-1) || direct
}
