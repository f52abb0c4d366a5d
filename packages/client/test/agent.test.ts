/**
 * The Agent end to end over real parts: a relay (serveRelay) and inboxes (serveInbox) on
 * 127.0.0.1 with a dev certificate, https-only node fetch, `ws` WebSockets.
 */
import { memoryStorage, type Storage } from '@agentmsg/core'
import type { RelayServer } from '@agentmsg/relay'
import { fsStorage } from '@agentmsg/storage-fs'
import { publishToRelay } from '@agentmsg/transport-relay'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createNodeAgent, type NodeAgent, type NodeAgentOptions } from '../src/node.js'
import {
  collect,
  createEnv,
  type Env,
  freePort,
  removeTempDirs,
  sleep,
  startRelay,
  tempDir,
} from './helpers.js'

let env: Env
let relay: RelayServer
const open: NodeAgent[] = []

beforeAll(async () => {
  env = await createEnv()
  relay = await startRelay(env)
})

afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
})

afterAll(async () => {
  await relay?.close()
  await removeTempDirs()
})

async function agent(options: NodeAgentOptions): Promise<NodeAgent> {
  const a = await createNodeAgent({
    fetch: env.fetch,
    streamFetch: env.streamFetch,
    WebSocket: env.WebSocket,
    ...options,
  })
  open.push(a)
  return a
}

/** A URL agent with an inbox on a fixed port (its id names the port). */
async function urlAgent(port: number, storage: Storage, extra: Partial<NodeAgentOptions> = {}) {
  return agent({
    identity: { agentId: `https://127.0.0.1:${port}` },
    inbox: { port, tls: { cert: env.cert.cert, key: env.cert.key } },
    storage,
    ...extra,
  })
}

describe('conversation between an inbox agent and a relay-only agent', () => {
  it.each(['sse', 'ws'] as const)('both ways, routes chosen automatically (%s)', async (mode) => {
    const bob = await urlAgent(await freePort(), memoryStorage())
    const carol = await agent({ relays: [relay.url], storage: memoryStorage(), mode })
    expect(carol.id).toMatch(/^did:key:z/)
    const bobInbox = collect(bob, 'message')
    const carolInbox = collect(carol, 'message')

    const sent = await carol.send(bob.id, 'hello bob')
    expect(sent.route).toBe('direct') // Bob is a URL agent: its identity document names its inbox
    const m1 = await bobInbox.nth(1)
    expect(m1).toMatchObject({
      text: 'hello bob',
      from: carol.id,
      transport: 'https',
      level: 3, // did:key
      conversationId: sent.conversationId,
    })
    expect(m1.message.phase).toBe('greeting')
    expect(m1.message.sequence).toBe(0)
    expect(m1.message.from.relays).toEqual([relay.url])

    // Carol has no inbox: Bob replies through her from.relays.
    const replied = await bob.reply(m1, 'hello carol')
    expect(replied).toMatchObject({ route: 'relay', relayUrl: relay.url })
    const m2 = await carolInbox.nth(1)
    expect(m2).toMatchObject({
      text: 'hello carol',
      from: bob.id,
      transport: 'relay',
      level: 2, // Bob's identity document
      source: 'identity-document',
      conversationId: sent.conversationId,
    })
    expect(m2.message.sequence).toBe(1)
    expect(m2.message.phase).toBe('response')

    const again = await carol.reply(m2, 'thanks')
    expect(again.route).toBe('direct')
    const m3 = await bobInbox.nth(2)
    expect(m3.message.sequence).toBe(2)
    expect(m3.text).toBe('thanks')

    // Bob learned Carol's relays: a new conversation reaches her without help.
    const fresh = await bob.send(carol.id, 'new topic')
    expect(fresh.route).toBe('relay')
    expect((await carolInbox.nth(2)).message.phase).toBe('greeting')
  })

  it('messages() iterates what arrives', async () => {
    const bob = await urlAgent(await freePort(), memoryStorage())
    const carol = await agent({ relays: [relay.url], storage: memoryStorage() })
    const it = bob.messages()[Symbol.asyncIterator]()
    await carol.send(bob.id, 'one')
    await carol.send(bob.id, 'two')
    expect((await it.next()).value.text).toBe('one')
    expect((await it.next()).value.text).toBe('two')
    await bob.close()
    expect((await it.next()).done).toBe(true)
  })

  it('refuses to send where no route is known', async () => {
    const carol = await agent({ relays: [relay.url], storage: memoryStorage() })
    const dave = await agent({ storage: memoryStorage(), sendOnly: true })
    await expect(carol.send(dave.id, 'hi')).rejects.toMatchObject({ code: 'not_found' })
  })
})

describe('fallback and restart', () => {
  it('direct delivery to a stopped inbox falls back to the relay; the restarted agent gets it', async () => {
    const port = await freePort()
    const bobStorage = memoryStorage()
    let bob = await urlAgent(port, bobStorage, { relays: [relay.url] })
    expect(bob.identity.document?.relay?.urls).toEqual([relay.url])
    const bobId = bob.id
    const carol = await agent({ relays: [relay.url], storage: memoryStorage() })
    const first = collect(bob, 'message')
    expect((await carol.send(bob.id, 'while up')).route).toBe('direct')
    await first.nth(1)

    await bob.close()
    open.splice(open.indexOf(bob), 1)
    const down = await carol.send(bobId, 'while down', {
      conversationId: (await first.nth(1)).conversationId,
    })
    expect(down).toMatchObject({ route: 'relay', relayUrl: relay.url })

    bob = await urlAgent(port, bobStorage, { relays: [relay.url] })
    expect(bob.id).toBe(bobId) // same identity from storage
    const after = collect(bob, 'message')
    const got = await after.nth(1)
    expect(got).toMatchObject({ text: 'while down', transport: 'relay', level: 3 })
    expect(got.message.message_id).toBe(down.messageId)
    await sleep(300)
    expect(after.seen).toHaveLength(1) // 'while up' is not delivered again
  })

  it('a restarted relay-only agent continues: same id, cursor, replay memory, sequences', async () => {
    const storage = memoryStorage()
    let carol = await agent({ relays: [relay.url], storage, mode: 'ws' })
    const carolId = carol.id
    const bob = await urlAgent(await freePort(), memoryStorage())
    const inbox = collect(carol, 'message')
    // Plaintext, so the replay below is the signed message itself (an opened body is not).
    const s1 = await bob.send(carol.id, 'one', { relays: [relay.url], seal: false })
    const m1 = await inbox.nth(1)
    expect(m1.text).toBe('one')
    // The cursor is persisted once the handler completed (then the entry is acknowledged).
    await expect
      .poll(() => storage.get('relay/cursor/' + encodeURIComponent(relay.url)))
      .toBeTypeOf('string')

    await carol.close()
    open.splice(open.indexOf(carol), 1)
    // While Carol is away: a new message, and a replay of one she already handled (the relay
    // deleted it on ack, so it stores the copy anew).
    await bob.send(carol.id, 'two', { conversationId: s1.conversationId })
    const { trace: _trace, ...replayed } = m1.message // trace is outside the signature
    await publishToRelay(replayed, relay.url, { fetch: env.fetch })
    await bob.send(carol.id, 'three', { conversationId: s1.conversationId })

    carol = await agent({ relays: [relay.url], storage, mode: 'sse' })
    expect(carol.id).toBe(carolId)
    const later = collect(carol, 'message')
    expect((await later.nth(1)).text).toBe('two')
    expect((await later.nth(2)).text).toBe('three')
    await sleep(300)
    expect(later.seen.map((m) => m.text)).toEqual(['two', 'three'])

    // The conversation's sequence continues after the restart.
    const bobInbox = collect(bob, 'message')
    const r = await carol.reply(await later.nth(2), 'got them')
    expect(r.conversationId).toBe(s1.conversationId)
    expect((await bobInbox.nth(1)).message.sequence).toBe(3)
  })

  it('restarts from fsStorage: same identity, nothing delivered twice', async () => {
    const dir = await tempDir()
    let storage = await fsStorage({ dir })
    let carol = await agent({ relays: [relay.url], storage })
    const carolId = carol.id
    const bob = await urlAgent(await freePort(), memoryStorage())
    const inbox = collect(carol, 'message')
    const s1 = await bob.send(carol.id, 'before', { relays: [relay.url] })
    await inbox.nth(1)
    await expect
      .poll(() => storage.get('relay/cursor/' + encodeURIComponent(relay.url)))
      .toBeTypeOf('string')
    await carol.close()
    open.splice(open.indexOf(carol), 1)
    await storage.close?.()

    await bob.send(carol.id, 'after', { conversationId: s1.conversationId })
    storage = await fsStorage({ dir })
    carol = await agent({ relays: [relay.url], storage })
    expect(carol.id).toBe(carolId)
    const later = collect(carol, 'message')
    expect((await later.nth(1)).text).toBe('after')
    await sleep(200)
    expect(later.seen).toHaveLength(1)
    await carol.close()
    open.splice(open.indexOf(carol), 1)
    await storage.close?.()
  })
})
