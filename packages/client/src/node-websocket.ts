/**
 * The WebSocket of a Node agent's relay streams (`mode: 'ws'`): `ws` with the agent's network
 * rules, as `createNodeFetch`: `ca` added to the system roots (PROFILE §6), and only addresses
 * the address policy allows (PROFILE §4), an IP literal judged before dialling.
 */
import dns from 'node:dns'
import net from 'node:net'
import { rootCertificates } from 'node:tls'
import { type AddressPolicy, AddressRefusedError } from '@agentmsg/core/server'
import type { WebSocketClientOptions, WebSocketConstructor } from '@agentmsg/transport-relay'
import { type ClientOptions, WebSocket as WsWebSocket } from 'ws'

/** Network rules of {@link nodeWebSocket}. */
export interface NodeWebSocketOptions {
  /** Extra trusted CA certificates, PEM, added to the system roots. */
  ca?: string | string[]
  addressPolicy: AddressPolicy
}

/** A WebSocket constructor for the relay client that obeys `ca` and the address policy. */
export function nodeWebSocket(options: NodeWebSocketOptions): WebSocketConstructor {
  const extra = options.ca === undefined ? [] : [options.ca].flat()
  // `ca` replaces Node's roots in a TLS connection: keep them, as createNodeFetch does.
  const ca = extra.length > 0 ? [...rootCertificates, ...extra] : undefined
  const policy = options.addressPolicy
  return class NodeAgentWebSocket extends WsWebSocket {
    constructor(url: string, _protocols?: undefined, client?: WebSocketClientOptions) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
      // net.connect skips the lookup for an IP literal: judge it here, before dialling.
      if (net.isIP(host) !== 0) policy.assertAddress(host)
      // `lookup` is passed on to tls.connect (ws's types do not list it).
      const settings: ClientOptions & { lookup: net.LookupFunction } = {
        ...client,
        ...(ca ? { ca } : {}),
        minVersion: 'TLSv1.2',
        lookup: policyLookup(policy, host),
      }
      super(url, settings)
    }
  } as unknown as WebSocketConstructor
}

/** A DNS lookup that answers only addresses the policy allows for `hostname`. */
function policyLookup(policy: AddressPolicy, hostname: string): net.LookupFunction {
  return (name, lookupOptions, callback) => {
    dns.lookup(name, { ...lookupOptions, all: true }, (err, addresses) => {
      if (err) return callback(err, '')
      const allowed = addresses.filter((a) => policy.allowsAddress(a.address, hostname))
      const first = allowed[0]
      if (!first) {
        const refused = new AddressRefusedError(addresses[0]?.address ?? '(none)', hostname)
        return callback(refused as Error as NodeJS.ErrnoException, '')
      }
      if (lookupOptions.all) return callback(null, allowed)
      callback(null, first.address, first.family)
    })
  }
}
