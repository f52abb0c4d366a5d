/**
 * The drop box transport passes the Transport contract of the installed
 * `@agentmsg/conformance`, over real HTTPS on 127.0.0.1 with a development certificate. A
 * sender finds each agent's drop box in its identity document, as an agent's router does.
 */
import { testTransport } from '@agentmsg/conformance'
import { publicKeyFromDidKey, type TransportFactory } from '@agentmsg/core'
import { createIdentityDocument } from '@agentmsg/core/identity'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { beforeAll } from 'vitest'
import { DROPBOX, dropBoxTransport, withDropBox } from '../src/index.js'

let tls: { cert: string; key: string; ca: string }
beforeAll(async () => {
  tls = await createDevCertificate()
})

/** Each agent's drop box, as its latest transport serves it (a new port after a restart). */
const boxes = new Map<string, string>()

const factory: TransportFactory = {
  protocol: DROPBOX,
  create(components) {
    const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
    const transport = dropBoxTransport({ serve: { tls }, ca: tls.ca, addressPolicy }).create(
      components,
    )
    const listen = transport.listen!.bind(transport)
    transport.listen = async (receive, options) => {
      await listen(receive, options)
      boxes.set(components.agentId, transport.url!)
    }
    return transport
  },
}

/** The identity document of a did:key agent whose drop box is at `url`. */
function documentOf(agent: string, url: string) {
  const endpoints = { inbox: url, capabilities: url }
  const document = createIdentityDocument({
    agentId: agent,
    publicKey: publicKeyFromDidKey(agent),
    endpoints,
  })
  return withDropBox(document, url)
}

testTransport('dropBoxTransport', {
  factory,
  delivery: 'direct',
  peer: (agent) => ({ agent, relays: [], document: documentOf(agent, boxes.get(agent)!) }),
})
