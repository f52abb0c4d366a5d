/**
 * Client addresses for the per-address limit (PROFILE §6): IPv6 addresses are bucketed per /64,
 * IPv4-mapped IPv6 counts as its IPv4 address, and `X-Forwarded-For` is believed only when the
 * connection comes from a configured trusted proxy. No Node built-ins: the handler is isomorphic.
 */
import { parseIp as parseIpText } from './address-policy.js'

/**
 * An IPv4 or IPv6 address as 16 bytes (IPv4 as `::ffff:a.b.c.d`), or `undefined`. Brackets and
 * a zone id are dropped: neither changes which host is counted.
 */
export function parseIp(text: string): Uint8Array | undefined {
  let s = text.trim()
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1)
  const ip = parseIpText(s)
  if (!ip) return undefined
  if (ip.version === 6) return ip.bytes
  const out = new Uint8Array(16)
  out[10] = 0xff
  out[11] = 0xff
  out.set(ip.bytes, 12)
  return out
}

function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false
  return b[10] === 0xff && b[11] === 0xff
}

/**
 * The rate-limit bucket of an address: an IPv4 address as itself, an IPv6 address as its /64
 * (`2001:db8:1:2::/64`), so one host cannot dodge the limit by walking its own prefix. Text
 * that is not an address is its own bucket.
 */
export function addressBucket(address: string): string {
  const b = parseIp(address)
  if (!b) return address.toLowerCase()
  if (isV4Mapped(b)) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`
  const w: string[] = []
  for (let i = 0; i < 8; i += 2) w.push(((b[i]! << 8) | b[i + 1]!).toString(16))
  return `${w.join(':')}::/64`
}

/** A set of addresses and CIDR ranges (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`). */
export class AddressSet {
  readonly #ranges: Array<{ bytes: Uint8Array; bits: number }> = []

  constructor(entries: readonly string[] = []) {
    for (const entry of entries) {
      const slash = entry.indexOf('/')
      const ip = parseIp(slash < 0 ? entry : entry.slice(0, slash))
      if (!ip) throw new TypeError(`not an IP address or CIDR range: ${JSON.stringify(entry)}`)
      const v4 = !entry.slice(0, slash < 0 ? undefined : slash).includes(':')
      let bits = 128
      if (slash >= 0) {
        const prefix = entry.slice(slash + 1)
        const n = /^[0-9]{1,3}$/.test(prefix) ? Number(prefix) : NaN
        if (!(n <= (v4 ? 32 : 128)))
          throw new TypeError(`bad prefix length in ${JSON.stringify(entry)}`)
        bits = v4 ? 96 + n : n
      }
      this.#ranges.push({ bytes: ip, bits })
    }
  }

  get size(): number {
    return this.#ranges.length
  }

  /** True when `address` falls in one of the ranges. */
  has(address: string): boolean {
    if (this.#ranges.length === 0) return false
    const ip = parseIp(address)
    if (!ip) return false
    return this.#ranges.some(({ bytes, bits }) => {
      let i = 0
      for (; bits - i * 8 >= 8; i++) if (ip[i] !== bytes[i]) return false
      const rest = bits - i * 8
      if (rest === 0) return true
      const mask = (0xff << (8 - rest)) & 0xff
      return (ip[i]! & mask) === (bytes[i]! & mask)
    })
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
  const hops = forwardedFor.split(',')
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!.trim()
    if (!parseIp(hop)) return direct
    if (!trusted.has(hop)) return hop
  }
  return hops[0]!.trim() || direct
}
