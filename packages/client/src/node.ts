/**
 * @agentmsg/client/node — the isomorphic entry plus {@link createNodeAgent}: an agent that also
 * receives on its own HTTPS inbox, through the same receive pipeline as its relay streams. Its
 * network is https only with the PROFILE §4 address rules, byte caps and timeouts unless the
 * application passes its own `fetch`. The address rules are re-exported.
 *
 * @packageDocumentation
 */
import type { TransportFactory } from '@agentmsg/core'
import { type AddressPolicy, createAddressPolicy } from '@agentmsg/core/server'
import {
  createIdentityFetcher,
  createNodeFetch,
  httpsTransport,
} from '@agentmsg/transport-https/node'
import { openAgent } from './agent/create.js'
import { relayFactory } from './agent/transports.js'
import type { Agent, AgentOptions } from './agent/types.js'
import { nodeWebSocket } from './node-websocket.js'

export type { AddressPolicy } from '@agentmsg/core/server'
export { createAddressPolicy } from '@agentmsg/core/server'
export * from './index.js'

/** Options for the agent's inbox server. */
export interface NodeInboxOptions {
  /** @default 0 */
  port?: number
  /** @default '127.0.0.1' */
  host?: string
  /** Certificate and key, PEM (https only, also in development: `createDevCertificate()`). */
  tls: { cert: string | Buffer; key: string | Buffer }
  /** Path of the agent's base URL (`/agents/bob` for `https://host/agents/bob`). @default '' */
  basePath?: string
}

/** Options for {@link createNodeAgent}. */
export interface NodeAgentOptions extends AgentOptions {
  /** Serve the inbox and documents (also when `sendOnly`); added to `transports` as their https. */
  inbox?: NodeInboxOptions
  /**
   * Extra trusted CA certificates, PEM (a dev CA: `loadDevCertificate(dir).ca`), added to the
   * system roots (PROFILE §6), for the agent's network: `createNodeFetch({ ca, addressPolicy })`
   * and `ws` with the same rules. Pass `ca`/`addressPolicy` or your own `fetch`, not both.
   */
  ca?: string | string[]
  /**
   * Which addresses the agent may connect to (PROFILE §4); loopback peers need
   * `createAddressPolicy({ allow: ['127.0.0.1'] })`. @default public unicast only
   */
  addressPolicy?: AddressPolicy
}

/** A Node agent, with its inbox's address when it serves one. */
export interface NodeAgent extends Agent {
  /** The inbox server's base URL (`https://127.0.0.1:8443`), when serving. */
  readonly inboxUrl: string | undefined
}

/**
 * Create an agent that, besides its relays, receives on its own HTTPS inbox, where a URL agent
 * also serves its current identity document (see the package README for an example).
 */
export async function createNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const { inbox, ca, addressPolicy, ...rest } = options
  const agentOptions: AgentOptions = { ...rest, ...nodeNetwork(options) }
  if (!inbox) return Object.assign(await openAgent(agentOptions), { inboxUrl: undefined })
  let served: ReturnType<typeof https.create> | undefined
  const https = httpsTransport({
    // The agent's fetch: the application's, or the policy-bound one of nodeNetwork.
    fetch: agentOptions.fetch ?? createNodeFetch(),
    inbox: { ...inbox, port: inbox.port ?? 0, host: inbox.host ?? '127.0.0.1' },
  })
  const serving: TransportFactory = {
    protocol: https.protocol,
    create: (components) => (served = https.create(components)),
  }
  const given = options.transports
  if (given?.some((f) => f.protocol === serving.protocol)) {
    throw new TypeError('createNodeAgent: `inbox` adds the https transport; `transports` has one')
  }
  const transports = given ? [serving, ...given] : [serving, relayFactory(agentOptions)]
  const agent = await openAgent({ ...agentOptions, transports }, { serving })
  return Object.defineProperty(agent, 'inboxUrl', {
    value: served?.url,
    enumerable: true,
  }) as unknown as NodeAgent
}

/**
 * The agent's network unless the application passes its own `fetch` (PROFILE §4, §6: agents use
 * the address rules by default): `createNodeFetch({ ca, addressPolicy })` for requests, one
 * without an overall timeout or total cap for relay streams, which never end (the relay
 * client's idle watchdog bounds their silence), the identity fetcher and the relay WebSocket on
 * the same rules. A `streamFetch`, `resolveIdentity` or `WebSocket` of the caller's is kept.
 */
function nodeNetwork(
  options: NodeAgentOptions,
): Pick<AgentOptions, 'fetch' | 'streamFetch' | 'resolveIdentity' | 'WebSocket'> {
  const { ca, addressPolicy } = options
  if (options.fetch) {
    if (ca !== undefined || addressPolicy !== undefined) {
      throw new TypeError('createNodeAgent: pass `ca` and `addressPolicy`, or your own `fetch`')
    }
    return {}
  }
  const network = { ca, addressPolicy: addressPolicy ?? createAddressPolicy() }
  return {
    fetch: createNodeFetch(network),
    streamFetch: options.streamFetch ?? createNodeFetch({ ...network, timeoutMs: 0 }),
    resolveIdentity:
      options.resolveIdentity ?? createIdentityFetcher({ fetch: createNodeFetch(network) }),
    WebSocket: options.WebSocket ?? nodeWebSocket(network),
  }
}
