/**
 * Authentication levels end to end (PROFILE §5): a level-0 introduction (HMAC token) carrying
 * an identity document → level 1 (introduced key) → level 2 (pinned after comparing
 * fingerprints); identity documents give 2, did:key 3; a downgrade is refused and not delivered.
 */
import { createIntroductionToken, type IdentityFetcher, memoryStorage } from '@agentmsg/core'
import type { RelayServer } from '@agentmsg/relay'
import { createIdentityFetcher } from '@agentmsg/transport-https'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createNodeAgent, fingerprint, type NodeAgent, type NodeAgentOptions } from '../src/node.js'
import { collect, createEnv, type Env, freePort, removeTempDirs, startRelay } from './helpers.js'

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
  const a = await createNodeAgent({ fetch: env.fetch, streamFetch: env.streamFetch, ...options })
  open.push(a)
  return a
}

describe('levels', () => {
  it('introduction (0) → introduced key (1) → pinned (2); a downgrade is refused', async () => {
    // Alice is a URL agent whose identity document Bob cannot find (not published yet).
    const aliceId = `https://127.0.0.1:${await freePort()}`
    const real = createIdentityFetcher({ fetch: env.fetch })
    const resolveIdentity: IdentityFetcher = async (id, o) =>
      id === aliceId ? { status: 'not_found', reason: 'not published' } : real(id, o)
    const bobPort = await freePort()
    const bob = await agent({
      identity: { agentId: `https://127.0.0.1:${bobPort}` },
      inbox: { port: bobPort, tls: { cert: env.cert.cert, key: env.cert.key } },
      storage: memoryStorage(),
      resolveIdentity,
    })
    const alice = await agent({ identity: { agentId: aliceId }, storage: memoryStorage() })
    const received = collect(bob, 'message')
    const errors = collect(bob, 'error')

    // Both humans were given the same token.
    const token = createIntroductionToken()
    await alice.introduce(token)
    await bob.introduce(token)

    const hello = await alice.send(bob.id, 'hi, Dana introduced us', { authLevel: 0 })
    const m0 = await received.nth(1)
    expect(m0).toMatchObject({ level: 0, source: 'shared-secret', knownContact: true })
    expect(m0.message.auth_level).toBe(0)
    expect(m0.message.security?.signatures.map((s) => s.alg)).toEqual(['hmac-sha256'])

    // Bob now holds Alice's key from the introduced document, at level 1.
    const [contact] = await bob.contacts.list()
    expect(contact?.agent).toBe(aliceId)
    expect(contact?.keys[0]?.source).toBe('introduction')
    const aliceFingerprint = await fingerprint(alice.identity.publicKey)
    expect(aliceFingerprint).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){5}$/)
    expect(contact?.keys[0]?.fingerprint).toBe(aliceFingerprint)

    await alice.send(bob.id, 'signed with my own key now', { conversationId: hello.conversationId })
    expect(await received.nth(2)).toMatchObject({ level: 1, source: 'introduction' })

    // The humans compare fingerprints; Bob pins the key: level 2.
    const fragment = alice.identity.keyId.split('#').pop()!
    await bob.contacts.pin(aliceId, alice.identity.publicKey, { keyId: fragment })
    await alice.send(bob.id, 'pinned', { conversationId: hello.conversationId })
    const m2 = await received.nth(3)
    expect(m2).toMatchObject({ level: 2, source: 'pinned', knownContact: true })
    expect(m2.message.sequence).toBe(2)

    // Downgrade: an HMAC-only message in the level-2 conversation, and a fresh HMAC greeting
    // (the peer floor is now 2). Both refused with 401, reported, never delivered.
    await expect(
      alice.send(bob.id, 'downgrade', {
        conversationId: hello.conversationId,
        authLevel: 0,
        phase: 'request',
      }),
    ).rejects.toMatchObject({ peerStatus: 401, peerCode: 'insufficient_auth_level' })
    const refused = await errors.nth(1)
    expect(refused.from).toBe(aliceId)
    expect(refused.error).toMatchObject({ code: 'insufficient_auth_level' })
    await expect(alice.send(bob.id, 'fresh start', { authLevel: 0 })).rejects.toMatchObject({
      peerCode: 'insufficient_auth_level',
    })
    expect(received.seen).toHaveLength(3)

    // An explicit renegotiation, verified at the current level, is accepted.
    await alice.send(bob.id, 'lower please', {
      conversationId: hello.conversationId,
      phase: 'greeting',
      authLevel: 1,
    })
    expect((await received.nth(4)).message.auth_level).toBe(1)
  })

  it('identity document (2) and did:key (3), also through the relay', async () => {
    const bobPort = await freePort()
    const bob = await agent({
      identity: { agentId: `https://127.0.0.1:${bobPort}` },
      inbox: { port: bobPort, tls: { cert: env.cert.cert, key: env.cert.key } },
      storage: memoryStorage(),
    })
    const carol = await agent({ relays: [relay.url], storage: memoryStorage() })
    const atBob = collect(bob, 'message')
    const atCarol = collect(carol, 'message')
    await carol.send(bob.id, 'did:key here', { route: 'direct' })
    expect(await atBob.nth(1)).toMatchObject({ level: 3, source: 'did-key' })
    await bob.send(carol.id, 'url agent here', { relays: [relay.url], route: 'relay' })
    expect(await atCarol.nth(1)).toMatchObject({ level: 2, source: 'identity-document' })
  })

  it('rotateKey: the inbox serves the new document and peers verify the new key', async () => {
    const bobPort = await freePort()
    const bob = await agent({
      identity: { agentId: `https://127.0.0.1:${bobPort}` },
      inbox: { port: bobPort, tls: { cert: env.cert.cert, key: env.cert.key } },
      storage: memoryStorage(),
    })
    const carol = await agent({ relays: [relay.url], storage: memoryStorage() })
    const atCarol = collect(carol, 'message')
    const oldKeyId = bob.identity.keyId
    const doc = await bob.rotateKey()
    expect(doc.keys.map((k) => k.status)).toEqual(['retired', 'active'])
    expect(bob.identity.keyId).not.toBe(oldKeyId)
    const res = await env.fetch(`${bob.id}/.well-known/agentmsg/identity`)
    expect(((await res.json()) as typeof doc).keys).toHaveLength(2)
    await bob.send(carol.id, 'after rotation', { relays: [relay.url] })
    const m = await atCarol.nth(1)
    expect(m.message.security?.signatures[0]?.key_id).toBe(bob.identity.keyId)
    expect(m.level).toBe(2)
  })
})
