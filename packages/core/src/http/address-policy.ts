/**
 * Outbound address rules of PROFILE §4: requests built from peer data (identity documents, inbox
 * URLs, relay URLs, webhooks) go only to public unicast addresses, checked on the address
 * actually connected to. Isomorphic and pure; the Node client (`createNodeFetch`) applies it to
 * sockets.
 *
 * Decisions, beyond PROFILE §4's list:
 * - Only canonical text is an address (see address.ts); anything else is never public.
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
import { type Cidr, cidrContains, inBlock, parseCidr, parseIp } from './address.js'

const V4_REFUSED = [
  ...['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16'],
  ...['172.16.0.0/12', '192.168.0.0/16', '224.0.0.0/4', '240.0.0.0/4'],
].map(parseCidr)

// IPv4-compatible `::/96` (deprecated, holds :: and ::1) and local-use NAT64 (RFC 8215) whole.
const V6_REFUSED = ['::/96', '64:ff9b:1::/48', 'fc00::/7', 'fe80::/10', 'ff00::/8'].map(parseCidr)

// IPv4-mapped, IPv4-translated and NAT64: the IPv4 address is the last 4 bytes.
const EMBEDDED = ['::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96'].map(parseCidr)
const SIX_TO_FOUR = parseCidr('2002::/16')
const TEREDO = parseCidr('2001::/32')

const publicV4 = (bytes: Uint8Array): boolean => !V4_REFUSED.some((b) => inBlock(bytes, b))

function publicV6(b: Uint8Array): boolean {
  if (V6_REFUSED.some((block) => inBlock(b, block))) return false
  if (EMBEDDED.some((block) => inBlock(b, block))) return publicV4(b.slice(12))
  if (inBlock(b, SIX_TO_FOUR)) return publicV4(b.slice(2, 6))
  if (inBlock(b, TEREDO)) return publicV4(b.slice(4, 8)) && publicV4(b.slice(12).map((x) => ~x))
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

const normalizeHost = (host: string): string =>
  host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')

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
    const parsed = blocks.length > 0 ? parseIp(text) : undefined
    return parsed !== undefined && blocks.some((b) => cidrContains(b, parsed))
  }

  return {
    allowsAddress,
    assertAddress(ip, hostname) {
      if (!allowsAddress(ip, hostname)) throw new AddressRefusedError(ip, hostname)
    },
  }
}
