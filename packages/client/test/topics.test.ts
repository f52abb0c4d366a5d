/**
 * Groups on a real relay: publish to a topic sealed for members (PROFILE §8), subscribers that
 * are members read it at its level, a subscriber that is not gets it marked not for it, and
 * the member list decides who opens the next message, not the ones already sent. Over SSE and
 * over WebSocket; subscriptions survive a restart on the same storage.
 */
import { memoryStorage } from '@agentmsg/core'
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

describe.each(['sse', 'ws'] as const)('topics over %s', (mode) => {
  it('members read it, a non-member gets it not for it; removing a member closes the next one only', async () => {
    const relay = await startRelay(env)
    open.push(relay)
    const agent = async (storage = memoryStorage()): Promise<NodeAgent> => {
      const a = await createNodeAgent({
        storage,
        relays: [relay.url],
        fetch: env.fetch,
        streamFetch: env.streamFetch,
        WebSocket: env.WebSocket,
        mode,
      })
      open.push(a)
      return a
    }
    const [a, b, c, d] = [await agent(), await agent(), await agent(), await agent()]
    const inbox = { b: collect(b, 'message'), c: collect(c, 'message'), d: collect(d, 'message') }
    for (const x of [b, c, d]) await x.subscribe('team/room-1')
    expect(b.topics()).toEqual(['team/room-1'])

    const team = a.group('team/room-1')
    await team.add(b.id, c.id)
    const first = await team.publish('first, for b and c')
    expect(first.sealedFor.sort()).toEqual([a.id, b.id, c.id].sort())
    for (const x of [inbox.b, inbox.c]) {
      const m = await x.nth(1)
      expect(m).toMatchObject({ text: 'first, for b and c', sealed: true, level: 3, from: a.id })
      expect(m.topic).toBe('team/room-1')
    }
    const seen = await inbox.d.nth(1)
    expect(seen).toMatchObject({ sealed: 'not-for-me', text: '', from: a.id, topic: 'team/room-1' })

    await team.remove(c.id)
    expect(await team.members()).toEqual([b.id])
    await team.publish('second, for b only')
    expect(await inbox.b.nth(2)).toMatchObject({ text: 'second, for b only', sealed: true })
    expect(await inbox.c.nth(2)).toMatchObject({ sealed: 'not-for-me', text: '' })
    expect(await inbox.d.nth(2)).toMatchObject({ sealed: 'not-for-me' })
    // What c already read stays read: removal changes who opens the next message only.
    expect(inbox.c.seen[0]?.text).toBe('first, for b and c')
  }, 60_000)
})

describe('topic subscriptions', () => {
  it('survive a restart on the same storage, and unsubscribe stops delivery', async () => {
    const relay = await startRelay(env)
    open.push(relay)
    const network = { relays: [relay.url], fetch: env.fetch, streamFetch: env.streamFetch }
    const storage = memoryStorage()
    const first = await createNodeAgent({ storage, ...network })
    await first.subscribe('news')
    await first.close()
    const again = await createNodeAgent({ storage, ...network })
    open.push(again)
    expect(again.topics()).toEqual(['news'])
    const publisher = await createNodeAgent(network)
    open.push(publisher)
    const inbox = collect(again, 'message')
    await publisher.publish('news', 'hello after restart', { allowPlaintext: true })
    expect(await inbox.nth(1)).toMatchObject({
      text: 'hello after restart',
      sealed: false,
      topic: 'news',
    })
    await again.unsubscribe('news')
    expect(again.topics()).toEqual([])
    await publisher.publish('news', 'after unsubscribe', { allowPlaintext: true })
    await publisher.send(again.id, 'direct, after', { relays: [relay.url] })
    expect(await inbox.nth(2)).toMatchObject({ text: 'direct, after' })
  }, 60_000)

  it('a publish without members is refused unless allowPlaintext; a bad topic is invalid_format', async () => {
    const relay = await startRelay(env)
    open.push(relay)
    const a = await createNodeAgent({
      relays: [relay.url],
      fetch: env.fetch,
      streamFetch: env.streamFetch,
    })
    open.push(a)
    await expect(a.publish('news', 'x')).rejects.toMatchObject({ code: 'not_found' })
    await expect(a.publish('News!', 'x', { allowPlaintext: true })).rejects.toMatchObject({
      code: 'invalid_format',
    })
    await expect(a.subscribe('no spaces')).rejects.toMatchObject({ code: 'invalid_format' })
  })

  it("over a webhook: the relay pushes the topic to the agent's own inbox, which verifies first", async () => {
    const relay = await startRelay(env)
    open.push(relay)
    const network = { relays: [relay.url], fetch: env.fetch, streamFetch: env.streamFetch }
    // No mailbox stream (sendOnly): what arrives comes through the inbox, pushed by the relay.
    const hooked = await createNodeAgent({
      ...network,
      sendOnly: true,
      inbox: { tls: { cert: env.cert.cert, key: env.cert.key } },
    })
    open.push(hooked)
    const inbox = collect(hooked, 'message')
    await hooked.subscribe('alerts', { webhook: `${hooked.inboxUrl}/.well-known/agentmsg/inbox` })
    const publisher = await createNodeAgent(network)
    open.push(publisher)
    await publisher.publish('alerts', 'pushed to the inbox', { members: [hooked.id] })
    const m = await inbox.nth(1)
    expect(m).toMatchObject({
      text: 'pushed to the inbox',
      sealed: true,
      topic: 'alerts',
      transport: 'https',
    })
  })
})
