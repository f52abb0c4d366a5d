/**
 * `createNodeAgent({ ca, addressPolicy })`: the agent's network built from the two options
 * (PROFILE §4 address rules on the connected address, PROFILE §6 https with a custom CA), for
 * inbox deliveries and identity documents alike, and the development certificate kept in a
 * directory. Real inboxes on 127.0.0.1.
 */
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { memoryStorage } from '@agentmsg/core'
import { isAddressRefusedError } from '@agentmsg/core/server'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  createAddressPolicy,
  createNodeAgent,
  type NodeAgent,
  type NodeAgentOptions,
} from '../src/node.js'
import { collect, freePort, removeTempDirs, tempDir } from './helpers.js'

let tls: Awaited<ReturnType<typeof loadDevCertificate>>
const open: NodeAgent[] = []

beforeAll(async () => {
  tls = await loadDevCertificate(path.join(await tempDir(), 'dev-tls'))
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
})
afterAll(removeTempDirs)

/** A URL agent serving its inbox on 127.0.0.1 (its id names the port). */
async function urlAgent(network: Partial<NodeAgentOptions>): Promise<NodeAgent> {
  const port = await freePort()
  const agent = await createNodeAgent({
    identity: { agentId: `https://127.0.0.1:${port}` },
    inbox: { port, tls },
    storage: memoryStorage(),
    ...network,
  })
  open.push(agent)
  return agent
}

const loopback = () => createAddressPolicy({ allow: ['127.0.0.1'] })

describe('createNodeAgent network options', () => {
  it("the agent's inbox advertises sealed_box, and a direct send with seal: true opens there", async () => {
    const bob = await urlAgent({ ca: tls.ca, addressPolicy: loopback() })
    const alice = await urlAgent({ ca: [tls.ca], addressPolicy: loopback() })
    const fetch = createNodeFetch({ ca: tls.ca, addressPolicy: loopback() })
    const res = await fetch(`${bob.id}/.well-known/agentmsg/capabilities`)
    // PROFILE §10: the agent's receiver opens sealed bodies with its seeds (PROFILE §8).
    expect(((await res.json()) as { encryption: unknown }).encryption).toEqual(['sealed_box'])
    const received = collect(bob, 'message')
    const sent = await alice.send(bob.id, 'sealed over TLS too', { seal: true })
    expect(sent).toMatchObject({ route: 'direct', sealed: true })
    expect(await received.nth(1)).toMatchObject({ text: 'sealed over TLS too', sealed: true })
  })

  it('with `ca` and an address policy allowing 127.0.0.1, a message is delivered', async () => {
    const bob = await urlAgent({ ca: tls.ca, addressPolicy: loopback() })
    const alice = await urlAgent({ ca: [tls.ca], addressPolicy: loopback() })
    const received = collect(bob, 'message')

    const sent = await alice.send(bob.id, 'over the dev certificate')
    expect(sent).toMatchObject({ route: 'direct', transport: 'https' })
    expect(sent.pending).toBeUndefined()
    // Bob verified Alice's signature with the key from her identity document, fetched with
    // the same CA and rules (PROFILE §4).
    const m = await received.nth(1)
    expect(m).toMatchObject({ from: alice.id, text: 'over the dev certificate', level: 2 })
    expect(m.message.message_id).toBe(sent.messageId)
  })

  it('without the allowance, the same send to 127.0.0.1 is refused (PROFILE §4)', async () => {
    const bob = await urlAgent({ ca: tls.ca, addressPolicy: loopback() })
    // `ca` alone: public unicast only.
    const alice = await urlAgent({ ca: tls.ca })
    const received = collect(bob, 'message')

    // Refused before any byte is sent: not retried, not kept in the outbox (a rejection).
    const error = await alice.send(bob.id, 'to a loopback inbox').catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'forbidden' })
    expect(isAddressRefusedError(error)).toBe(true)
    expect(received.seen).toEqual([])
  })

  it('`ca` or `addressPolicy` with an own `fetch` is a usage error', async () => {
    await expect(
      createNodeAgent({ storage: memoryStorage(), ca: tls.ca, fetch: globalThis.fetch }),
    ).rejects.toThrow(/`ca` and `addressPolicy`, or your own `fetch`/)
  })
})

describe('loadDevCertificate', () => {
  it('writes cert.pem and a 0600 key.pem on first use and reuses them after', async () => {
    const dir = path.join(await tempDir(), 'nested', 'dev-tls')
    const first = await loadDevCertificate(dir)
    expect(first.certFile).toBe(path.resolve(dir, 'cert.pem'))
    expect(await readFile(first.certFile, 'utf8')).toBe(first.cert)
    expect(await readFile(first.keyFile, 'utf8')).toBe(first.key)
    expect((await stat(first.keyFile)).mode & 0o777).toBe(0o600)
    expect((await stat(dir)).mode & 0o777).toBe(0o700)
    expect(first.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/)

    const again = await loadDevCertificate(dir)
    expect(again).toEqual(first)
  })
})
