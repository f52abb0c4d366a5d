/**
 * The Node `httpsTransport` with an inbox passes the Transport contract (`testTransport`, a
 * `direct` transport: the inbox answers with the receiver's outcome) over real HTTPS on
 * 127.0.0.1.
 */
import { testTransport } from '@agentmsg/conformance'
import type { TransportFactory } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { beforeAll } from 'vitest'
import { httpsTransport } from '../src/node-transport.js'
import { testCertificate } from './tls.js'

let cert: { cert: string; key: string; ca: string }
beforeAll(async () => {
  cert = await testCertificate()
})

/** Each agent's inbox URL, as its latest transport serves it (a new port after a restart). */
const inboxes = new Map<string, string>()

const factory: TransportFactory = {
  protocol: 'https',
  create(components) {
    const transport = httpsTransport({
      ca: cert.ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
      inbox: { tls: cert },
    }).create(components)
    const listen = transport.listen!.bind(transport)
    transport.listen = async (receive, options) => {
      await listen(receive, options)
      inboxes.set(components.agentId, `${transport.url}/.well-known/agentmsg/inbox`)
    }
    return transport
  },
}

testTransport('httpsTransport (Node, with an inbox)', {
  factory,
  delivery: 'direct',
  peer: (agent) => ({ agent, relays: [], inbox: inboxes.get(agent) }),
})
