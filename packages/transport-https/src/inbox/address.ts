/**
 * Client addresses for the per-address limit (PROFILE §6): IPv6 addresses are bucketed per /64,
 * IPv4-mapped IPv6 counts as its IPv4 address, and `X-Forwarded-For` is believed only when the
 * connection comes from a configured trusted proxy. No Node built-ins: the handler is isomorphic.
 */

/** Parse an IPv4 or IPv6 address into 16 bytes (IPv4 as `::ffff:a.b.c.d`), or `undefined`. */
export function parseIp(text: string): Uint8Array | undefined {
  let s = text.trim()
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1)
  const zone = s.indexOf('%')
  if (zone >= 0) s = s.slice(0, zone)
  if (!s.includes(':')) {
    const v4 = parseIpv4(s)
    if (!v4) return undefined
    const out = new Uint8Array(16)
    out[10] = 0xff
    out[11] = 0xff
    out.set(v4, 12)
    return out
  }
  return parseIpv6(s)
}

function parseIpv4(s: string): Uint8Array | undefined {
  const parts = s.split('.')
  if (parts.length !== 4) return undefined
  const out = new Uint8Array(4)
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!
    if (!/^(?:0|[1-9][0-9]{0,2})$/.test(p)) return undefined
    const n = Number(p)
    if (n > 255) return undefined
    out[i] = n
  }
  return out
}

function parseIpv6(s: string): Uint8Array | undefined {
  const halves = s.split('::')
  if (halves.length > 2) return undefined
  const words = (part: string): number[] | undefined => {
    if (part === '') return []
    const out: number[] = []
    const groups = part.split(':')
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i]!
      if (i === groups.length - 1 && g.includes('.')) {
        const v4 = parseIpv4(g)
        if (!v4) return undefined
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!)
      } else {
        if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return undefined
        out.push(parseInt(g, 16))
      }
    }
    return out
  }
  const head = words(halves[0]!)
  const tail = halves.length === 2 ? words(halves[1]!) : []
  if (!head || !tail) return undefined
  const missing = 8 - head.length - tail.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined
  const all = [...head, ...new Array<number>(missing).fill(0), ...tail]
  const out = new Uint8Array(16)
  all.forEach((w, i) => {
    out[2 * i] = w >> 8
    out[2 * i + 1] = w & 0xff
  })
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
