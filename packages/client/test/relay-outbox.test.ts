/**
 * Relay targets are durable (PROFILE §6 retries): a did:key recipient reachable only through
 * relays loses nothing when its relay refuses for now. Past the relay's per-sender burst
 * (PROFILE §6: 20, then 60 a minute) a publish is answered 429 with `Retry-After`; the send
 * resolves `pending`, the outbox publishes it again later, and every message arrives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNodeAgent, type NodeAgent } from '../src/node.js'
import { collect, createEnv, type Env, removeTempDirs, startRelay } from './helpers.js'

let env: Env
const open: Array<{ close(): Promise<void> }> = []
beforeAll(async () => {
  env = await createEnv()
})
afterAll(async () => {
  for (const c of open.splice(0).reverse()) await c.close()
  await removeTempDirs()
})

describe('relay targets are durable', () => {
  it('publishes refused 429 for now resolve pending and are delivered later, all of them', async () => {
    const relay = await startRelay(env)
    open.push(relay)
    const agent = async (): Promise<NodeAgent> => {
      const a = await createNodeAgent({
        relays: [relay.url],
        fetch: env.fetch,
        streamFetch: env.streamFetch,
      })
      open.push(a)
      return a
    }
    const [alice, bob] = [await agent(), await agent()]
    const inbox = collect(bob, 'message')
    const delivered = collect(alice, 'delivered')
    const sent = []
    for (let i = 0; i < 24; i++)
      sent.push(await alice.send(bob.id, `m${i}`, { relays: [relay.url] }))
    const pending = sent.filter((s) => s.pending)
    expect(pending.length).toBeGreaterThan(0) // the burst ran out: these wait in the outbox
    expect(pending.every((s) => s.route === 'relay' && s.sealed)).toBe(true)
    await inbox.nth(24, 40_000)
    expect(inbox.seen.map((m) => m.text).sort()).toEqual(sent.map((_, i) => `m${i}`).sort())
    await delivered.nth(24, 5_000)
  }, 60_000)
})
