/**
 * Attacks on introductions (PROFILE §5), against real agents on 127.0.0.1
 * with a dev certificate: a token introduces one peer, so its holder cannot speak as anybody
 * else (at the inbox and on the relay path), a forged greeting cannot redirect later sends to
 * the attacker's "relay", and a URL agent's fetched identity document is final over keys
 * introduced for it.
 */
import { createServer, type Server } from 'node:https'
import { fixtureAgent } from '@agentmsg/conformance/portable'
import {
  type CreateMessageOptions,
  createIntroductionToken,
  createMessage,
  ed25519Signer,
  generateKeyPair,
  hmacSigner,
  type IdentityFetcher,
  type JsonValue,
  type Message,
  memoryStorage,
  type Signer,
  signMessage,
} from '@agentmsg/core'
import { createIdentityDocument } from '@agentmsg/core/identity'
import type { RelayServer } from '@agentmsg/relay'
import { createIdentityFetcher } from '@agentmsg/transport-https'
import { publishToRelay } from '@agentmsg/transport-relay'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createNodeAgent, type NodeAgent, type NodeAgentOptions } from '../src/node.js'
import { collect, createEnv, type Env, freePort, removeTempDirs, startRelay } from './helpers.js'

let env: Env
let relay: RelayServer
/** The attacker's "relay": counts every request it gets, answers 503. */
let trap: Server
let trapUrl: string
const trapHits: string[] = []
const open: NodeAgent[] = []

beforeAll(async () => {
  env = await createEnv()
  relay = await startRelay(env)
  trap = createServer({ cert: env.cert.cert, key: env.cert.key }, (req, res) => {
    trapHits.push(`${req.method} ${req.url}`)
    req.resume()
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' })
    res.end('{"status":"error","code":"unavailable","message":"try later"}')
  })
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve))
  trapUrl = `https://127.0.0.1:${(trap.address() as { port: number }).port}`
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
  trapHits.length = 0
})
afterAll(async () => {
  await new Promise((resolve) => trap?.close(resolve))
  await relay?.close()
  await removeTempDirs()
})

async function agent(options: NodeAgentOptions = {}): Promise<NodeAgent> {
  const a = await createNodeAgent({
    fetch: env.fetch,
    streamFetch: env.streamFetch,
    storage: memoryStorage(),
    ...options,
  })
  open.push(a)
  return a
}

/** A URL agent serving its inbox and identity document on loopback. */
async function urlAgent(options: NodeAgentOptions = {}): Promise<NodeAgent> {
  const port = await freePort()
  return agent({
    identity: { agentId: `https://127.0.0.1:${port}` },
    inbox: { port, tls: { cert: env.cert.cert, key: env.cert.key } },
    ...options,
  })
}

/** A greeting `from` → `to`, signed by `signers` (an HMAC token's, an Ed25519 key's). */
async function greeting(
  from: string,
  to: string,
  signers: Signer[],
  extra: Partial<CreateMessageOptions> = {},
): Promise<Message> {
  const unsigned = createMessage({
    from,
    to,
    conversationId: `c-${Math.random().toString(36).slice(2)}`,
    sequence: 0,
    phase: 'greeting',
    authLevel: 0,
    text: 'hi, Dana introduced us',
    ...extra,
  })
  return signMessage(unsigned, signers)
}

/** POST a message to an agent's inbox; the HTTP status and error code. */
async function post(to: NodeAgent, message: Message): Promise<{ status: number; code?: string }> {
  const res = await env.fetch(`${to.inboxUrl}/.well-known/agentmsg/inbox`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(message),
  })
  const body = (await res.json()) as { code?: string }
  return { status: res.status, ...(body.code ? { code: body.code } : {}) }
}

/** An identity document for `agentId` listing a key the attacker holds. */
async function forgedDocument(agentId: string) {
  const keys = await generateKeyPair()
  const doc = createIdentityDocument({ agentId, publicKey: keys.publicKey, keyId: 'k-evil' })
  return {
    keys,
    doc,
    part: { type: 'data' as const, data: { identity: doc as unknown as JsonValue } },
  }
}

describe('attack: an introduction token speaks only for the peer it introduces', () => {
  it('a token named for bob: its holder greeting as carol is refused at the inbox, and later sends never go to the relay the forgery named', async () => {
    const alice = await urlAgent()
    const bob = await agent()
    const carol = await agent({ relays: [relay.url] })
    const token = createIntroductionToken()
    await alice.introduce(token, { agent: bob.id })
    const atAlice = collect(alice, 'message')
    const atCarol = collect(carol, 'message')

    // Alice was told out of band where Carol can be reached, and wrote to her there.
    await alice.send(carol.id, 'hello carol', { relays: [relay.url] })
    expect(await atCarol.nth(1)).toMatchObject({ from: alice.id })

    // The token's holder signs a level-0 greeting as Carol, pointing at its own "relay".
    const forged = await greeting(carol.id, alice.id, [await hmacSigner(token, carol.id)], {
      relays: [trapUrl],
      text: 'it is me, carol, at a new relay',
    })
    expect(await post(alice, forged)).toEqual({ status: 401, code: 'invalid_signature' })
    expect(atAlice.seen).toEqual([])
    const carolContact = (await alice.contacts.list()).find((c) => c.agent === carol.id)
    expect(carolContact?.relays).toEqual([relay.url])
    expect(carolContact?.keys).toEqual([])

    // Alice's next message to Carol goes to Carol's relay, not to the attacker's.
    await alice.send(carol.id, 'are you at a new relay?')
    expect(await atCarol.nth(2)).toMatchObject({ from: alice.id, text: 'are you at a new relay?' })
    expect(trapHits).toEqual([])

    // Bob, whom the token introduces, greets with it.
    await bob.introduce(token)
    await bob.send(alice.id, 'hi alice', { authLevel: 0 })
    expect(await atAlice.nth(1)).toMatchObject({ from: bob.id, level: 0, source: 'shared-secret' })
  })

  it('an unnamed token is bound to the first sender it verifies; then another sender with it is refused', async () => {
    const alice = await urlAgent()
    const bob = await agent()
    const token = createIntroductionToken()
    await alice.introduce(token)
    await bob.introduce(token)
    const atAlice = collect(alice, 'message')

    await bob.send(alice.id, 'hi alice, Dana introduced us', { authLevel: 0 })
    expect(await atAlice.nth(1)).toMatchObject({ from: bob.id, level: 0, source: 'shared-secret' })

    const mallory = await fixtureAgent()
    const asMallory = await greeting(mallory.id, alice.id, [await hmacSigner(token, mallory.id)])
    expect(await post(alice, asMallory)).toEqual({ status: 401, code: 'invalid_signature' })
    // With its own Ed25519 signature beside the token's (level 3 alone): still refused, a
    // failing signature refuses the message (PROFILE §3).
    const both = await greeting(mallory.id, alice.id, [
      mallory.signer,
      await hmacSigner(token, mallory.id),
    ])
    expect(await post(alice, both)).toEqual({ status: 401, code: 'invalid_signature' })
    // Bob still greets with it.
    await bob.send(alice.id, 'again', { authLevel: 0 })
    expect(await atAlice.nth(2)).toMatchObject({ from: bob.id, level: 0 })
    expect(atAlice.seen.map((m) => m.from)).toEqual([bob.id, bob.id])
  })

  it('on the relay path: a greeting as carol made with bob’s token is refused and remembers no relay', async () => {
    const alice = await agent({ relays: [relay.url] })
    const bob = await agent()
    const token = createIntroductionToken()
    await alice.introduce(token, { agent: bob.id })
    const received = collect(alice, 'message')
    const errors = collect(alice, 'error')

    // Relays require an Ed25519 signature: the attacker signs with its own did:key ("carol")
    // and adds the token's.
    const carol = await fixtureAgent()
    const forged = await greeting(
      carol.id,
      alice.id,
      [carol.signer, await hmacSigner(token, carol.id)],
      {
        relays: [trapUrl],
      },
    )
    await publishToRelay(forged, relay.url, { fetch: env.fetch })
    const refused = await errors.nth(1)
    expect(refused.error).toMatchObject({ code: 'invalid_signature' })
    expect(received.seen).toEqual([])
    expect((await alice.contacts.list()).find((c) => c.agent === carol.id)).toBeUndefined()
    // No relay was learned for Carol: nothing to send to, and the trap saw nothing.
    await expect(alice.send(carol.id, 'hello?')).rejects.toMatchObject({ code: 'not_found' })
    expect(trapHits).toEqual([])
  })
})

describe('attack: keys introduced for a URL agent against its real identity document', () => {
  it('are not accepted once the document can be fetched, and are dropped', async () => {
    const carol = await urlAgent()
    let published = false
    let offset = 0
    const real = createIdentityFetcher({ fetch: env.fetch })
    const resolveIdentity: IdentityFetcher = async (id, o) =>
      id === carol.id && !published
        ? { status: 'not_found', reason: 'not published yet' }
        : real(id, o)
    const alice = await urlAgent({ resolveIdentity, now: () => Date.now() + offset })
    const token = createIntroductionToken()
    await alice.introduce(token, { agent: carol.id })
    const atAlice = collect(alice, 'message')

    // A holder of Carol's token introduces a key for Carol while her document cannot be had:
    // it counts, at level 1 (PROFILE §5).
    const { keys, part } = await forgedDocument(carol.id)
    const intro = await greeting(carol.id, alice.id, [await hmacSigner(token, carol.id)], {
      parts: [{ type: 'text', text: 'my key' }, part],
    })
    expect((await post(alice, intro)).status).toBe(202)
    const evil = ed25519Signer(keys, `${carol.id}#k-evil`)
    const first = await greeting(carol.id, alice.id, [evil], { authLevel: 1 })
    expect((await post(alice, first)).status).toBe(202)
    expect(await atAlice.nth(2)).toMatchObject({ level: 1, source: 'introduction' })

    // Carol's real document (which lacks that key) can now be fetched, after the "no document"
    // answer expired: the document is final, the introduced key is not found and is dropped.
    published = true
    offset = 61_000
    const later = await greeting(carol.id, alice.id, [evil], { authLevel: 1 })
    expect(await post(alice, later)).toEqual({ status: 401, code: 'unknown_sender' })
    const contact = (await alice.contacts.list()).find((c) => c.agent === carol.id)
    expect(contact?.keys ?? []).toEqual([])
    expect(atAlice.seen).toHaveLength(2)

    // Carol herself, with the key her document lists, is accepted at level 2.
    await carol.send(alice.id, 'the real carol', { route: 'direct' })
    expect(await atAlice.nth(3)).toMatchObject({
      from: carol.id,
      level: 2,
      source: 'identity-document',
    })
  })

  it('a document already fetched: an introduced key it does not list is never accepted', async () => {
    const carol = await urlAgent()
    let offset = 0
    const alice = await urlAgent({ now: () => Date.now() + offset })
    const token = createIntroductionToken()
    await alice.introduce(token, { agent: carol.id })
    const atAlice = collect(alice, 'message')
    const { keys, part } = await forgedDocument(carol.id)
    const intro = await greeting(carol.id, alice.id, [await hmacSigner(token, carol.id)], {
      parts: [{ type: 'text', text: 'my other key' }, part],
    })
    expect((await post(alice, intro)).status).toBe(202)
    await atAlice.nth(1)
    const evil = ed25519Signer(keys, `${carol.id}#k-evil`)
    const signed = await greeting(carol.id, alice.id, [evil], {
      authLevel: 1,
    })
    // Alice fetched Carol's document on the introduction: a key it does not list is "try
    // later" within the refetch interval (PROFILE §4), then not found — never the introduced one.
    expect(await post(alice, signed)).toEqual({ status: 503, code: 'unavailable' })
    offset = 61_000
    const again = await greeting(carol.id, alice.id, [evil], { authLevel: 1 })
    expect(await post(alice, again)).toEqual({ status: 401, code: 'unknown_sender' })
    expect(atAlice.seen).toHaveLength(1)
    expect((await alice.contacts.list()).find((c) => c.agent === carol.id)?.keys ?? []).toEqual([])
  })
})
