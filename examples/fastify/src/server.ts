/**
 * A Fastify 5 app that is also an agent: Bob's inbox, identity and capabilities documents are
 * served under /agents/bob beside the app's own routes, and every message goes through Bob's
 * receive pipeline (signature, replay, authentication level) before his `message` event.
 *
 * Run: `npm start` (a development certificate; Bob is https://127.0.0.1:8451/agents/bob).
 */
import { fileURLToPath } from 'node:url'
import { type AddressPolicy, createNodeAgent, safeText } from '@agentmsg/client/node'
import { createDevCertificate, loadDevCa } from '@agentmsg/dev-tls'
import {
  getRequestListener,
  httpsTransport,
  type InboxHandler,
} from '@agentmsg/transport-https/node'
import Fastify from 'fastify'

export interface ServerOptions {
  port: number
  /** @default '127.0.0.1' */
  host?: string
  /** Certificate and key, PEM: https also in development (`createDevCertificate()`). */
  tls: { cert: string; key: string }
  /** Bob's id: the public URL of his base path. @default https://127.0.0.1:<port>/agents/bob */
  agentUrl?: string
  /** Extra CA trusted by Bob's outbound requests (the development CA). */
  ca?: string
  /** Where Bob may connect (`allow: ['127.0.0.1']` for peers on loopback). @default public only */
  addressPolicy?: AddressPolicy
}

export async function startServer(options: ServerOptions) {
  const agentUrl = options.agentUrl ?? `https://127.0.0.1:${options.port}/agents/bob`
  const basePath = new URL(agentUrl).pathname
  const network = { ca: options.ca, addressPolicy: options.addressPolicy }
  // The agent's https transport hands its inbox to `mount` once the agent listens, instead of
  // serving it on a server of its own.
  let inbox: InboxHandler | undefined
  const agent = await createNodeAgent({
    identity: { agentId: agentUrl },
    ...network,
    transports: [httpsTransport({ ...network, webInbox: { basePath, mount: (h) => (inbox = h) } })],
  })

  const app = Fastify({ https: { ...options.tls, minVersion: 'TLSv1.2' } })
  const listener = getRequestListener(inbox!)
  app.all(
    `${basePath}/*`,
    {
      // Taken over before Fastify parses a body: the inbox reads the bytes the sender signed.
      onRequest: async (request, reply) => {
        reply.hijack()
        listener(request.raw, reply.raw)
      },
    },
    () => {},
  )
  app.get('/', async () => ({ agent: agent.id }))

  await app.listen({ port: options.port, host: options.host ?? '127.0.0.1' })
  return {
    agent,
    async close() {
      await agent.close() // unmounts and drains the inbox
      await app.close()
    },
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // A certificate from this machine's development CA, which clients trust by its file.
  const ca = await loadDevCa()
  const { agent } = await startServer({
    port: Number(process.env.PORT ?? 8451),
    tls: await createDevCertificate({ ca }),
  })
  agent.on('message', (m) =>
    console.log(`message ${m.level} ${safeText(m.from)}: ${safeText(m.text)}`),
  )
  console.log(`${agent.id} is listening; clients trust ${ca.certFile}`)
}
