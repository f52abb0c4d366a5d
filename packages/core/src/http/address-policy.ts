/**
 * Outbound address rules of PROFILE §4: requests built from peer data (identity documents, inbox
 * URLs, relay URLs, webhooks) go only to public unicast addresses, checked on the address
 * actually connected to (the Node client, `createNodeFetch`, applies it to sockets). Beyond
 * PROFILE §4's list:
 * - Only canonical text is an address (address.ts). An address with a zone id is never public:
 *   zones exist only for scoped (non-global) addresses.
 * - IPv4 inside IPv6 is judged by the IPv4 address: IPv4-mapped, IPv4-translated, NAT64
 *   `64:ff9b::/96`, 6to4 `2002::/16` (tunnelled over IPv4 to it) and Teredo `2001::/32` (its
 *   server and de-obfuscated client). Refused outright: the deprecated IPv4-compatible `::/96`
 *   and the local-use NAT64 `64:ff9b:1::/48` (RFC 8215: where it embeds IPv4, only its network
 *   knows).
 * - 255.255.255.255 is inside 240/4. Other special-purpose blocks (TEST-NETs, 198.18/15,
 *   192.0.0/24, the deprecated fec0::/10) are not in PROFILE §4's list and are not refused.
 */
import { AgentMsgError, isAgentMsgError } from '../errors.js'
import { type Cidr, cidrContains, inBlock, parseCidr, parseIp } from './address.js'

// The PROFILE §4 blocks, parsed on first use: a bundle that never checks an address drops them.
const blocks = (list: string[]): (() => Cidr[]) => {
  let parsed: Cidr[] | undefined
  return () => (parsed ??= list.map(parseCidr))
}
const V4_REFUSED = /* @__PURE__ */ blocks([
  ...['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16'],
  ...['172.16.0.0/12', '192.168.0.0/16', '224.0.0.0/4', '240.0.0.0/4'],
])
// `::/96` holds `::` and `::1`.
const V6_REFUSED = /* @__PURE__ */ blocks([
  ...['::/96', '64:ff9b:1::/48', 'fc00::/7', 'fe80::/10', 'ff00::/8'],
])
// IPv4-mapped, IPv4-translated and NAT64 (the IPv4 address in the last 4 bytes), 6to4, Teredo.
const EMBEDDED = /* @__PURE__ */ blocks(['::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96'])
const TUNNELS = /* @__PURE__ */ blocks(['2002::/16', '2001::/32'])

const publicV4 = (bytes: Uint8Array): boolean => !V4_REFUSED().some((b) => inBlock(bytes, b))

function publicV6(b: Uint8Array): boolean {
  if (V6_REFUSED().some((block) => inBlock(b, block))) return false
  if (EMBEDDED().some((block) => inBlock(b, block))) return publicV4(b.slice(12))
  const [sixToFour, teredo] = TUNNELS() as [Cidr, Cidr]
  if (inBlock(b, sixToFour)) return publicV4(b.slice(2, 6))
  if (inBlock(b, teredo)) return publicV4(b.slice(4, 8)) && publicV4(b.slice(12).map((x) => ~x))
  return true
}

/**
 * True when `ip` is a public unicast address under PROFILE §4 (see the module comment): not in
 * its refused blocks nor an IPv4-in-IPv6 form of them; not other text nor a zoned address.
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
 * An outbound connection refused by the address policy (`forbidden`; a key that cannot be
 * fetched because of it is not found, PROFILE §4). See {@link isAddressRefusedError}.
 */
export class AddressRefusedError extends AgentMsgError {
  /** @internal The brand `isAddressRefusedError` tests. */
  readonly [BRAND] = true

  /** `address` refused, connecting to `hostname` when known. */
  constructor(
    /** The refused IP address. */
    readonly address: string,
    /** The host name it was connected for, when known. */
    readonly hostname?: string,
  ) {
    const host = hostname !== undefined && hostname !== address ? ` of host ${hostname}` : ''
    super(
      'forbidden',
      `address ${address}${host} is not public unicast (PROFILE §4); an operator may allow it explicitly`,
    )
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
   * What an operator allows besides public unicast: addresses, CIDR blocks, host names
   * (`localhost`, `*.internal.example` for any subdomain; allowed on any address they resolve
   * to). @example ['127.0.0.1/32', '::1', 'localhost']
   */
  allow?: string[]
}

const HOST_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/

// Case-insensitive, without brackets or a trailing dot.
const normalizeHost = (host: string) =>
  host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$|\.$/g, '$1')

/**
 * The outbound address policy: public unicast only, plus what `allow` names, judged on the
 * address actually connected to.
 * @throws TypeError when an `allow` entry is neither an address, a CIDR block nor a host name.
 * @example
 * const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
 * policy.assertAddress('10.0.0.1', 'x.example') // throws: address 10.0.0.1 of host x.example is not public unicast…
 */
export function createAddressPolicy(options: AddressPolicyOptions = {}): AddressPolicy {
  const blocks: Cidr[] = []
  // Host names, and `.example` for `*.example`.
  const names: string[] = []
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
    names.push(wildcard ? `.${name}` : name)
  }

  const allowsAddress = (ip: string, hostname?: string): boolean => {
    const h = hostname !== undefined && names.length > 0 ? normalizeHost(hostname) : undefined
    if (h && names.some((n) => (n.startsWith('.') ? h.endsWith(n) : h === n))) return true
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
