/**
 * The isomorphic `createAgent` (memory storage, no Node entry) receiving on its own inbox through
 * `httpsTransport({ webInbox: { mount } })`, as a Deno, Bun or Worker agent does: the transport
 * hands its web-standard handler to `mount`, and the application's own HTTPS server (here
 * `serveHttps` on node:https, standing in for `Deno.serve`) routes requests to it. A Node agent
 * sends over real TLS; on close the handler is unmounted.
 */
import type { InboxHandler } from '@agentmsg/transport-https'
import { httpsTransport } from '@agentmsg/transport-https'
import { serveHttps } from '@agentmsg/transport-https/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAgent } from '../src/index.js'
import { createNodeAgent } from '../src/node.js'
import { collect, createEnv, type Env, freePort } from './helpers.js'

let env: Env
beforeAll(async () => {
  env = await createEnv()
})

const servers: Array<Awaited<ReturnType<typeof serveHttps>>> = []
afterAll(async () => {
  for (const s of servers) await s.close()
})

describe('httpsTransport({ webInbox }): an inbox on the application’s own server', () => {
  it('receives from a Node agent at level 2, replies, and unmounts on close', async () => {
    const port = await freePort()
    const mounted: Array<InboxHandler | undefined> = []
    let current: InboxHandler | undefined
    // The application's server: every request goes to whatever handler is mounted now.
    const front: InboxHandler = {
      fetch: (request, info) =>
        current
          ? current.fetch(request, info)
          : Promise.resolve(new Response('no inbox', { status: 503 })),
      close: async () => undefined,
      idle: async () => undefined,
      get pending() {
        return current?.pending ?? 0
      },
      ready: Promise.resolve(),
    }
    servers.push(await serveHttps(front, { port, tls: { cert: env.cert.cert, key: env.cert.key } }))

    const errors: unknown[] = []
    const bob = await createAgent({
      identity: { agentId: `https://127.0.0.1:${port}` },
      // Identity documents of URL senders, fetched trusting the development CA.
      fetch: env.fetch,
      onError: (error) => errors.push(error),
      transports: [
        httpsTransport({
          fetch: env.fetch,
          webInbox: {
            mount: (handler) => {
              mounted.push(handler)
              current = handler
            },
          },
        }),
      ],
    })
    // Alice: a Node URL agent with its own inbox, so that Bob's reply goes out through the
    // same transport's sender.
    const alicePort = await freePort()
    const alice = await createNodeAgent({
      identity: { agentId: `https://127.0.0.1:${alicePort}` },
      inbox: { port: alicePort, tls: { cert: env.cert.cert, key: env.cert.key } },
      fetch: env.fetch,
    })
    try {
      const bobInbox = collect(bob, 'message')
      const aliceInbox = collect(alice, 'message')
      expect(mounted).toHaveLength(1)
      await alice.send(bob.id, 'hello from node')
      const got = await bobInbox.nth(1)
      // Level 2: Alice's key comes from her identity document, fetched over https.
      expect(got).toMatchObject({ text: 'hello from node', from: alice.id, level: 2 })
      await bob.reply(got, 'hello from the web inbox')
      expect(await aliceInbox.nth(1)).toMatchObject({
        text: 'hello from the web inbox',
        from: bob.id,
        level: 2,
      })
    } finally {
      await alice.close()
      await bob.close()
    }
    expect(errors).toEqual([])
    expect(mounted).toHaveLength(2)
    expect(mounted[1]).toBeUndefined()
  })
})
