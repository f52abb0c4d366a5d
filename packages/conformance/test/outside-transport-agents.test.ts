/**
 * An agent finds a transport written outside this repository (examples/dropbox-transport)
 * through a URL agent's identity document: bob's document, served at his well-known path,
 * lists his drop box as `endpoints.dropbox`; alice's router asks her transports for targets,
 * the drop box transport finds it there, and the message goes through it, sealed for bob (the
 * target does not declare itself confidential). A document without the member gives no target.
 */
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { type Agent, createAgent, type ReceivedMessage } from '@agentmsg/client'
import { createNodeAgent } from '@agentmsg/client/node'
import { type IdentityDocument, keyPairFromSeed } from '@agentmsg/core'
import { createIdentityDocument } from '@agentmsg/core/identity'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { afterEach, expect, it } from 'vitest'
import { dropBoxTransport, withDropBox } from '../../../examples/dropbox-transport/src/index.js'

const closing: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close()
})

/** A web server answering a URL agent's well-known identity path with `document(id)`. */
async function serveIdentity(
  tls: { cert: string; key: string },
  document: (agentId: string) => IdentityDocument,
): Promise<string> {
  let id = ''
  const server: Server = createServer(tls, (req, res) => {
    if (req.url !== '/.well-known/agentmsg/identity') return void res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document(id)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closing.push(() => new Promise((resolve) => server.close(resolve)))
  id = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  return id
}

/** A port nobody listens on now (for a drop box whose URL the document must name first). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

const nextMessage = (agent: Agent) =>
  new Promise<ReceivedMessage>((resolve) => {
    const off = agent.on('message', (m) => {
      off()
      resolve(m)
    })
  })

it('finds the drop box in a URL agent’s identity document and delivers through it, sealed', async () => {
  const tls = await createDevCertificate()
  const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
  const seed = crypto.getRandomValues(new Uint8Array(32))
  const { publicKey } = await keyPairFromSeed(seed)
  const box = `https://127.0.0.1:${await freePort()}/dropbox`
  const documentOf = (agentId: string) =>
    withDropBox(createIdentityDocument({ agentId, publicKey }), box)
  const bobId = await serveIdentity(tls, documentOf)

  const bob = await createAgent({
    identity: { agentId: bobId, seed, document: documentOf(bobId) },
    transports: [dropBoxTransport({ serve: { tls, port: Number(new URL(box).port) } })],
  })
  closing.push(() => bob.close())
  const alice = await createNodeAgent({
    transports: [dropBoxTransport({ ca: tls.ca, addressPolicy })],
    ca: tls.ca,
    addressPolicy,
  })
  closing.push(() => alice.close())

  const atBob = nextMessage(bob)
  const sent = await alice.send(bobId, 'hello through the drop box')
  expect(sent).toMatchObject({ transport: 'dropbox', route: 'direct', sealed: true })
  expect(await atBob).toMatchObject({
    from: alice.id,
    text: 'hello through the drop box',
    transport: 'dropbox',
    sealed: true,
  })

  // A URL agent whose document lists no drop box: the transport finds no target for it.
  const carolKeys = await keyPairFromSeed(crypto.getRandomValues(new Uint8Array(32)))
  const carolId = await serveIdentity(tls, (agentId) =>
    createIdentityDocument({ agentId, publicKey: carolKeys.publicKey }),
  )
  await expect(alice.send(carolId, 'hello?')).rejects.toMatchObject({ code: 'not_found' })
})
