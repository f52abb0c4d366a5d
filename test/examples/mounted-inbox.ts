/**
 * The checks every framework example's inbox passes, as the example is: started on a free port
 * over HTTPS (development CA), Bob's inbox at /agents/bob beside the app's own route `/`. A real
 * agent delivers to it at level 3; the identity document is served there; a tampered message is
 * refused 401 through the framework.
 */
import type { NodeAgent } from '@agentmsg/client/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  deliverTampered,
  type ExampleEnv,
  exampleEnv,
  freePort,
  nextMessage,
  sender,
} from './helpers.js'

/** An example's `startServer`. */
type StartServer = (options: {
  port: number
  tls: ExampleEnv['tls']
  ca: string
  addressPolicy: ExampleEnv['addressPolicy']
}) => Promise<{ agent: NodeAgent; close(): Promise<unknown> | unknown }>

/** Runs the shared checks against `examples/<name>`; resolves `env` for a file's own tests. */
export function describeMountedInbox(name: string, startServer: StartServer): () => ExampleEnv {
  let env: ExampleEnv
  let app: Awaited<ReturnType<StartServer>>
  let port: number
  beforeAll(async () => {
    env = await exampleEnv()
    port = await freePort()
    app = await startServer({
      port,
      tls: env.tls,
      ca: env.tls.ca,
      addressPolicy: env.addressPolicy,
    })
  })
  afterAll(() => app?.close())

  describe(`examples/${name}: an agent inbox mounted at a sub-path of the app`, () => {
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
  return () => env
}
