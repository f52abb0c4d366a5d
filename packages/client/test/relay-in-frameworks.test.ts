/**
 * The relay mounted under an existing Express 5 or Fastify 5 app at a sub-path (/agentmsg), over
 * HTTPS with a development CA: its HTTP endpoints through `getRequestListener` (Express
 * middleware; a Fastify `onRequest` hook that hijacks the reply), its WebSocket endpoint on the
 * server's `upgrade` event (`createRelayWebSocket`). A did:key agent publishes; one agent
 * receives over SSE, another over the WebSocket, both through the mounted relay, while the app
 * still answers its own routes.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:https'
import { createRelayHandler, createRelayWebSocket, memoryRelayStore } from '@agentmsg/relay'
import { getRequestListener } from '@agentmsg/transport-https/node'
import express from 'express'
import Fastify from 'fastify'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createAddressPolicy, createNodeAgent, type NodeAgent } from '../src/node.js'
import { collect, createEnv, type Env, freePort } from './helpers.js'

let env: Env
beforeAll(async () => {
  env = await createEnv()
})

const cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

/** The relay for `https://127.0.0.1:<port>/agentmsg`, and its WebSocket endpoint. */
function mountableRelay(port: number) {
  const relay = createRelayHandler({
    baseUrl: `https://127.0.0.1:${port}/agentmsg`,
    store: memoryRelayStore(),
    ca: env.cert.ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
  })
  const ws = createRelayWebSocket(relay)
  /** The server's `upgrade` listener: the relay's path, and nothing else of the app's. */
  const upgrade = (server: Server) =>
    server.on('upgrade', (req, socket, head) => {
      if (req.url?.split('?')[0] === '/agentmsg/relay/ws') ws.handleUpgrade(req, socket, head)
    })
  cleanup.push(async () => {
    await relay.close()
    await ws.close()
  })
  return { relay, upgrade }
}

const frameworks = {
  async express(port: number) {
    const { relay, upgrade } = mountableRelay(port)
    const app = express()
    app.use('/agentmsg', getRequestListener(relay))
    app.use(express.json())
    app.get('/', (_req, res) => {
      res.json({ app: 'express' })
    })
    const server = createServer({ cert: env.cert.cert, key: env.cert.key }, app)
    upgrade(server)
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    cleanup.push(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
  },
  async fastify(port: number) {
    const { relay, upgrade } = mountableRelay(port)
    const app = Fastify({ https: { cert: env.cert.cert, key: env.cert.key } })
    const listener = getRequestListener(relay)
    const onRequest = async (request: { raw: any }, reply: { raw: any; hijack(): void }) => {
      reply.hijack()
      listener(request.raw, reply.raw)
    }
    app.all('/agentmsg/*', { onRequest }, () => {})
    app.get('/', async () => ({ app: 'fastify' }))
    upgrade(app.server as Server)
    await app.listen({ port, host: '127.0.0.1' })
    cleanup.push(async () => {
      ;(app.server as Server).closeAllConnections()
      await app.close()
    })
  },
}

describe.each(Object.keys(frameworks) as Array<keyof typeof frameworks>)(
  'the relay mounted at /agentmsg in %s',
  (name) => {
    it('carries a message from a publishing agent to agents on SSE and on the WebSocket', async () => {
      const port = await freePort()
      await frameworks[name](port)
      const relayUrl = `https://127.0.0.1:${port}/agentmsg`
      const network = {
        ca: env.cert.ca,
        addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
      }
      const agents: NodeAgent[] = []
      cleanup.push(() => Promise.all(agents.map((a) => a.close())))
      const open = async (options: Parameters<typeof createNodeAgent>[0]) => {
        const agent = await createNodeAgent({ ...network, ...options })
        agents.push(agent)
        return agent
      }
      const onSse = await open({ relays: [relayUrl], mode: 'sse' })
      const onWs = await open({ relays: [relayUrl], mode: 'ws' })
      const alice = await open({ sendOnly: true })
      const sse = collect(onSse, 'message')
      const ws = collect(onWs, 'message')

      for (const [to, text] of [
        [onSse, 'over SSE'],
        [onWs, 'over the WebSocket'],
      ] as const) {
        const sent = await alice.send(to.id, text, { relays: [relayUrl] })
        expect(sent).toMatchObject({ route: 'relay', relayUrl, sealed: true })
      }
      for (const [inbox, text] of [
        [sse, 'over SSE'],
        [ws, 'over the WebSocket'],
      ] as const) {
        expect(await inbox.nth(1)).toMatchObject({
          from: alice.id,
          level: 3,
          text,
          transport: 'relay',
          sealed: true,
        })
      }
      // The app's own routes are the app's.
      const own = await env.fetch(`https://127.0.0.1:${port}/`)
      expect(await own.json()).toEqual({ app: name })
    })
  },
)
