/**
 * examples/express as it is: an Express 5 app serving Bob's inbox at /agents/bob over HTTPS
 * (development CA). A real agent delivers to it; a tampered message is refused through Express;
 * and an app that puts `express.json()` before the inbox is told so, not answered "bad
 * signature".
 */
import { once } from 'node:events'
import { createServer } from 'node:https'
import { getRequestListener } from '@agentmsg/transport-https/node'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer } from '../../examples/express/src/server.js'
import {
  deliverTampered,
  type ExampleEnv,
  exampleEnv,
  freePort,
  nextMessage,
  sender,
} from './helpers.js'

let env: ExampleEnv
let app: Awaited<ReturnType<typeof startServer>>
let port: number
beforeAll(async () => {
  env = await exampleEnv()
  port = await freePort()
  app = await startServer({ port, tls: env.tls, ca: env.tls.ca, addressPolicy: env.addressPolicy })
})
afterAll(() => app?.close())

describe('examples/express: an agent inbox mounted at a sub-path of an Express app', () => {
  it('receives a signed message from a real agent, verified at level 3', async () => {
    const bob = `https://127.0.0.1:${port}/agents/bob`
    expect(app.agent.id).toBe(bob)
    const alice = await sender(env)
    try {
      const received = nextMessage(app.agent)
      const sent = await alice.send(bob, 'hello from alice')
      expect(sent).toMatchObject({ route: 'direct', transport: 'https' })
      expect(await received).toMatchObject({
        from: alice.id,
        level: 3,
        text: 'hello from alice',
        transport: 'https',
      })
    } finally {
      await alice.close()
    }
  })

  it('serves the identity document there, refuses a tampered message 401, keeps its routes', async () => {
    const bob = app.agent.id
    const doc = await env.fetch(`${bob}/.well-known/agentmsg/identity`)
    expect(doc.status).toBe(200)
    expect(((await doc.json()) as { agent_id: string }).agent_id).toBe(bob)
    expect(await deliverTampered(env, bob)).toEqual({ status: 401, code: 'invalid_signature' })
    const own = await env.fetch(`https://127.0.0.1:${port}/`)
    expect(await own.json()).toEqual({ agent: bob })
  })
})

describe('getRequestListener in Express after a body parser', () => {
  it('answers 500 and reports that the body was already read', async () => {
    const errors: unknown[] = []
    const inbox = { fetch: async () => new Response('never reached') }
    const misordered = express()
    misordered.use(express.json())
    misordered.use('/inbox', getRequestListener(inbox, { onError: (e) => errors.push(e) }))
    const server = createServer({ ...env.tls, minVersion: 'TLSv1.2' }, misordered)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as { port: number }
    try {
      const response = await env.fetch(`https://127.0.0.1:${port}/inbox`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"a":1}',
      })
      expect(response.status).toBe(500)
      expect(String(errors[0])).toMatch(/already read; mount before body parsers/)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
