/**
 * Attack (issue 9, item 3): a peer writes a loopback address as an IP literal, in each form a URL
 * parser accepts, hoping the agent dials it before the address policy looks (PROFILE §4). A
 * loopback listener on 127.0.0.1 and ::1 counts the TCP connections it accepts: with default
 * settings there are none, and the caller's error is the same whether a port is open or closed.
 */
import net from 'node:net'
import { isAddressRefusedError } from '@agentmsg/core/server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNodeFetch } from '../src/node-fetch.js'
import {
  type CountingServer,
  closedPort,
  countingServer,
  literalOrigins,
} from './attack-helpers.js'
import { createNodeIdentityFetcher } from './identity-helpers.js'
import { testCertificate } from './tls.js'

const { ca } = await testCertificate()

let open: CountingServer
let closed: number
beforeAll(async () => {
  open = await countingServer()
  closed = await closedPort()
})
afterAll(() => open.close())

/** The error a call rejects with, as the caller sees it (name, code, message). */
async function seen(
  p: Promise<unknown>,
): Promise<{ name: string; code: unknown; message: string }> {
  const e = (await p.then(
    () => new Error('resolved'),
    (x: unknown) => x,
  )) as Error & { code?: unknown }
  expect(isAddressRefusedError(e)).toBe(true)
  return { name: e.name, code: e.code, message: e.message }
}

describe('attack: IP-literal hosts are refused before dialling', () => {
  it('control: every literal form reaches the listener when dialled directly', async () => {
    const before = open.connections
    for (const origin of literalOrigins(open.port)) {
      const host = new URL(origin).hostname.replace(/^\[|\]$/g, '')
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect({ host, port: open.port }, () => {
          socket.destroy()
          resolve()
        })
        socket.on('error', reject)
      })
    }
    await expect.poll(() => open.connections - before).toBe(6)
  })

  it('createNodeFetch: no connection for any form, the same error open or closed', async () => {
    // Trusting the listener's certificate: only the address policy stands in the way.
    const fetch = createNodeFetch({ ca })
    const before = open.connections
    for (const [i, origin] of literalOrigins(open.port).entries()) {
      const toOpen = await seen(fetch(`${origin}/admin/api`, { method: 'POST', body: '{}' }))
      const toClosed = await seen(
        fetch(`${literalOrigins(closed)[i]}/admin/api`, { method: 'POST', body: '{}' }),
      )
      expect(toOpen.code).toBe('forbidden')
      expect(toClosed).toEqual(toOpen)
      expect(toOpen.message).not.toMatch(/ECONNREFUSED|certificate|ENOTFOUND|EAI_AGAIN/)
    }
    await new Promise((r) => setTimeout(r, 100))
    expect(open.connections - before).toBe(0)
    expect(open.requests).toBe(0)
  })

  it('createNodeIdentityFetcher: no connection; not found, saying only that it failed', async () => {
    const fetchIdentity = createNodeIdentityFetcher({ ca })
    const before = open.connections
    for (const [i, origin] of literalOrigins(open.port).entries()) {
      // Agent ids are in normal form (`2130706433` is not one): the URL parser's spelling.
      const agent = new URL(`${origin}/agents/victim`).href
      const other = new URL(`${literalOrigins(closed)[i]}/agents/victim`).href
      expect((await fetchIdentity(`${origin}/agents/victim`)).status).toBe('not_found')
      const toOpen = await fetchIdentity(agent)
      const toClosed = await fetchIdentity(other)
      expect(toOpen).toEqual({
        status: 'not_found',
        reason: `the identity document of ${agent} could not be fetched`,
      })
      expect(toClosed).toEqual({
        status: 'not_found',
        reason: `the identity document of ${other} could not be fetched`,
      })
    }
    await new Promise((r) => setTimeout(r, 100))
    expect(open.connections - before).toBe(0)
  })

  it('a host name resolving to loopback is refused at DNS time: no connection either', async () => {
    const fetch = createNodeFetch({
      ca,
      lookup: (_name, _options, callback) =>
        (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
          { address: '127.0.0.1', family: 4 },
          { address: '::1', family: 6 },
        ]),
    })
    const before = open.connections
    const toOpen = await seen(fetch(`https://internal.example:${open.port}/`))
    const toClosed = await seen(fetch(`https://internal.example:${closed}/`))
    expect(toClosed).toEqual(toOpen)
    await new Promise((r) => setTimeout(r, 100))
    expect(open.connections - before).toBe(0)
  })
})
