/**
 * How the demo's Node agents reach the local relay: its development CA as their one custom CA
 * (verification stays on, PROFILE §6) and loopback allowed by the address rules (PROFILE §4).
 */
import { createAddressPolicy } from '@agentmsg/client/node'
import { WebSocket as WS } from 'ws'

/** `createNodeAgent` options for a relay on 127.0.0.1 whose certificate `ca` issued. */
export function localNetwork(ca) {
  return {
    ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    // The relay WebSocket (`mode: 'ws'`) with the same CA.
    WebSocket: class extends WS {
      constructor(url, protocols) {
        super(url, protocols, { ca })
      }
    },
  }
}
