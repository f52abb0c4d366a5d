/**
 * How the demo's Node agents reach the local relay, and nothing else: its development CA as
 * their one custom CA (verification stays on, PROFILE §6), loopback allowed by the address rules
 * (PROFILE §4) — and every request and WebSocket bound to the relay's origin. Loopback being
 * allowed must not let a stranger's message make Echo dial another local port: the relays its
 * `from.relays` names, a URL agent's identity document or inbox. Those are refused here before
 * any connection, so the demo agents answer through the demo's own relay only.
 */
import { createAddressPolicy } from '@agentmsg/client/node'
import { createIdentityFetcher, createNodeFetch } from '@agentmsg/transport-https/node'
import { WebSocket as WS } from 'ws'

/** `createNodeAgent` network options for agents that talk to `relayUrl` only (`ca` issued its certificate). */
export function localNetwork(relayUrl, ca) {
  const relay = new URL(relayUrl)
  const only = (url) => {
    const target = new URL(url)
    if (target.host !== relay.host)
      throw new Error(`the demo's agents connect to ${relay.origin} only, not ${target.origin}`)
  }
  const bound = (fetch) => async (input, init) => {
    only(input instanceof Request ? input.url : input)
    return fetch(input, init)
  }
  const network = { ca, addressPolicy: createAddressPolicy({ allow: [relay.hostname] }) }
  const fetch = bound(createNodeFetch(network))
  return {
    fetch,
    // Streams never end: no overall timeout (the relay client's idle watchdog bounds them).
    streamFetch: bound(createNodeFetch({ ...network, timeoutMs: 0 })),
    resolveIdentity: createIdentityFetcher({ fetch }),
    // The relay WebSocket (`mode: 'ws'`) with the same CA and the same bound.
    WebSocket: class extends WS {
      constructor(url, protocols) {
        only(url)
        super(url, protocols, { ca })
      }
    },
  }
}
