/**
 * The connection side of `createNodeFetch`: an `https.Agent` whose every TCP connection obeys
 * the address policy of PROFILE §4. A host written as an IP literal is judged before anything is
 * dialled; a host name is resolved, refused addresses dropped, and the address actually
 * connected to is checked again before the TLS handshake starts (DNS rebinding).
 */
import dns from 'node:dns'
import https from 'node:https'
import net from 'node:net'
import type { Duplex } from 'node:stream'
import { type AddressPolicy, AddressRefusedError } from '@agentmsg/core/server'

/** Options of {@link PolicyAgent}. */
export interface PolicyAgentOptions extends https.AgentOptions {
  policy: AddressPolicy
  connectTimeoutMs: number
  /** Resolves host names; the policy filters what it answers. @default dns.lookup */
  lookup?: net.LookupFunction | undefined
}

type Callback = (err: Error | null, stream: Duplex) => void

/**
 * The error for a host written as an IP literal that the policy refuses, or `undefined` when it
 * is not an IP literal or is allowed. `host` may carry IPv6 brackets. The WHATWG URL parser has
 * already turned `2130706433`, `0x7f.1` or `0177.0.0.1` into `127.0.0.1`, and
 * `[::ffff:127.0.0.1]` into `[::ffff:7f00:1]`, so canonical text is all that reaches here.
 */
export function refusedLiteral(
  policy: AddressPolicy,
  host: string,
): AddressRefusedError | undefined {
  const bare = host.replace(/^\[|\]$/g, '')
  if (net.isIP(bare) === 0 || policy.allowsAddress(bare)) return undefined
  return new AddressRefusedError(bare)
}

/** An https.Agent whose TCP connections are checked against the policy before TLS starts. */
export class PolicyAgent extends https.Agent {
  readonly #policy: AddressPolicy
  readonly #connectTimeoutMs: number
  readonly #lookup: net.LookupFunction

  constructor(options: PolicyAgentOptions) {
    const { policy, connectTimeoutMs, lookup, ...rest } = options
    super(rest)
    this.#policy = policy
    this.#connectTimeoutMs = connectTimeoutMs
    this.#lookup = lookup ?? (dns.lookup as net.LookupFunction)
  }

  override createConnection(
    options: https.RequestOptions,
    callback?: Callback,
  ): Duplex | null | undefined {
    const cb: Callback = callback ?? (() => {})
    const policy = this.#policy
    const host = String(options.host ?? options.hostname ?? 'localhost')
    const port = Number(options.port ?? 443)
    const hostname = host.replace(/^\[|\]$/g, '')
    let done = false
    const finish = (err: Error | null, stream?: Duplex) => {
      if (done) return
      done = true
      cb(err, stream as Duplex)
    }
    // net.connect skips the lookup for an IP literal, so it is judged here, before dialling:
    // a refused address is never connected to, open port or closed (PROFILE §4).
    const literal = refusedLiteral(policy, hostname)
    if (literal) {
      process.nextTick(() => finish(literal))
      return undefined
    }
    const tcp = net.connect({
      host: hostname,
      port,
      lookup: policyLookup(policy, hostname, this.#lookup),
      ...(options.family ? { family: options.family } : {}),
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    })
    const onError = (err: Error) => {
      tcp.destroy()
      finish(err)
    }
    tcp.once('error', onError)
    const connectTimeoutMs = this.#connectTimeoutMs
    const onTimeout = () => {
      onError(new Error(`connecting to ${hostname}:${port} timed out after ${connectTimeoutMs} ms`))
    }
    if (connectTimeoutMs > 0) tcp.setTimeout(connectTimeoutMs, onTimeout)
    tcp.once('connect', () => {
      tcp.removeListener('error', onError)
      tcp.removeListener('timeout', onTimeout)
      tcp.setTimeout(0)
      const address = tcp.remoteAddress
      if (address === undefined || !policy.allowsAddress(address, hostname)) {
        const err = new AddressRefusedError(address ?? '(unknown)', hostname)
        tcp.destroy()
        finish(err)
        return
      }
      // Only now does the TLS handshake start, on the checked socket.
      const socket = super.createConnection({ ...options, socket: tcp } as https.RequestOptions)
      finish(null, socket ?? undefined)
    })
    return undefined
  }
}

/** A DNS lookup that drops refused addresses early (the connect-time check stays the rule). */
function policyLookup(
  policy: AddressPolicy,
  hostname: string,
  lookup: net.LookupFunction,
): net.LookupFunction {
  return (name, options, callback) => {
    lookup(name, { ...options, all: true }, (err, result) => {
      if (err) return callback(err, '')
      const addresses = Array.isArray(result)
        ? result
        : [{ address: result, family: net.isIP(result) || 4 }]
      const ok = addresses.filter((a) => policy.allowsAddress(a.address, hostname))
      if (ok.length === 0) {
        const first = addresses[0]?.address ?? '(none)'
        const refused = new AddressRefusedError(first, hostname) as Error as NodeJS.ErrnoException
        return callback(refused, '')
      }
      if (options.all) return callback(null, ok)
      callback(null, ok[0]!.address, ok[0]!.family)
    })
  }
}
