/**
 * The default transports: https (inboxes) and relay (publishes with failover, streams the
 * agent's relays). The https transport and the identity fetcher are loaded when first needed,
 * so a relay-only browser agent does not download them.
 */
import type {
  IdentityFetcher,
  Transport,
  TransportComponents,
  TransportFactory,
} from '@agentmsg/core'
import { parseAgentId } from '@agentmsg/core/http'
import { relayTransport } from '@agentmsg/transport-relay/transport'
import { lazy } from './documents.js'
import type { AgentOptions } from './types.js'

/** Loads the https transport on first use (a separate chunk for bundlers). */
const loadHttps = () => import('@agentmsg/transport-https')

/** The transports an agent uses when `transports` is not given. */
export function defaultTransports(o: AgentOptions): TransportFactory[] {
  return [lazyHttpsTransport({ fetch: o.fetch }), relayFactory(o)]
}

/** The relay transport with the agent's options (it streams from the agent's `relays`). */
export function relayFactory(o: AgentOptions): TransportFactory {
  const { fetch, streamFetch, WebSocket } = o
  return relayTransport({ mode: o.mode ?? 'sse', fetch, streamFetch, WebSocket })
}

/**
 * The https transport behind a lazy `import()`: loaded the first time a peer may have an inbox
 * (a URL agent, or an inbox given for it: PROFILE §4, §7).
 */
export function lazyHttpsTransport(options: { fetch?: typeof fetch } = {}): TransportFactory {
  return {
    protocol: 'https',
    async create(components: TransportComponents): Promise<Transport> {
      let closed = false
      const load = lazy(async () => {
        const transport = await (await loadHttps()).httpsTransport(options).create(components)
        // Loaded after close(): closed at once, so its sends reject.
        if (closed) await transport.close()
        return transport
      })
      return {
        protocol: 'https',
        async targets(peer, targetOptions) {
          if (!peer.inbox && parseAgentId(peer.agent, 'to').kind !== 'url') return []
          return (await load()).targets?.(peer, targetOptions) ?? []
        },
        send: async (message, target, sendOptions) =>
          (await load()).send(message, target, sendOptions),
        async close() {
          closed = true
          const transport = await load.peek()?.catch(() => undefined)
          await transport?.close()
        },
      }
    },
  }
}

/** The default identity-document fetcher, loaded with the https transport on first use. */
export function lazyIdentityFetcher(fetch: typeof globalThis.fetch | undefined): IdentityFetcher {
  const fetcher = lazy(async () => (await loadHttps()).createIdentityFetcher({ fetch }))
  return async (agentId, options) => (await fetcher())(agentId, options)
}
