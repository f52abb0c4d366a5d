/**
 * Keys of URL agents fetched from a second real HTTPS server (revoked, retired, missing,
 * unreachable), and the error phase messages of PROFILE §7.
 */
import { createServer, request as httpsRequest, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { type FixtureAgent, fixtureAgent, signedMessage } from '@agentmsg/conformance'
import {
  createMessage,
  ed25519Signer,
  generateKeyPair,
  type IdentityDocument,
  type IdentityFetcher,
  type KeyPair,
  type Message,
  signMessage,
} from '@agentmsg/core'
import {
  createIdentityDocument,
  IdentityDocumentCache,
  revokeKey,
  rotateKey,
} from '@agentmsg/core/identity'
import type { ErrorReplySender } from '@agentmsg/core/receive'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { InboxHandlerOptions } from '../src/inbox/types.js'
import { post, startInbox, stopInboxes, tableResolver, until } from './inbox-helpers.js'
import { testCertificate } from './tls.js'

const DAY = 86_400_000

/** Identity documents served over HTTPS at `<agent path>/.well-known/agentmsg/identity`. */
let identityServer: Server
let origin = ''
const documents = new Map<string, IdentityDocument | number>()

beforeAll(async () => {
  const { cert, key } = await testCertificate()
  identityServer = createServer({ cert, key, minVersion: 'TLSv1.2' }, (req, res) => {
    const entry = documents.get(req.url ?? '')
    if (typeof entry === 'number' || entry === undefined) {
      res.writeHead(entry ?? 404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(entry))
  })
  await new Promise<void>((r) => identityServer.listen(0, '127.0.0.1', r))
  origin = `https://127.0.0.1:${(identityServer.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((r) => identityServer.close(() => r())))
afterEach(stopInboxes)

/**
 * A minimal test-only identity fetcher over node:https that trusts the test certificate (the
 * production fetcher, with its address policy, lives in src/identity-fetcher.ts).
 */
function testFetcher(ca: string): IdentityFetcher {
  return (agentId) =>
    new Promise((resolve) => {
      const req = httpsRequest(
        `${agentId}/.well-known/agentmsg/identity`,
        { ca, agent: false },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => {
            const status = res.statusCode ?? 0
            if (status >= 500)
              resolve({ status: 'unavailable', reason: `HTTP ${status}`, retryAfter: 30 })
            else if (status !== 200) resolve({ status: 'not_found', reason: `HTTP ${status}` })
            else
              resolve({
                status: 'ok',
                document: JSON.parse(Buffer.concat(chunks).toString('utf8')),
              })
          })
        },
      )
      req.on('error', (e) => resolve({ status: 'unavailable', reason: e.message }))
      req.end()
    })
}

let agents = 0

/** A URL agent on the identity server, with key `k1` in its document (changed by `edit`). */
async function urlAgent(
  edit: (doc: IdentityDocument, keys: KeyPair) => IdentityDocument | number = (d) => d,
) {
  const path = `/agents/a${++agents}`
  const id = origin + path
  const keys = await generateKeyPair()
  const doc = createIdentityDocument({
    agentId: id,
    publicKey: keys.publicKey,
    keyId: 'k1',
    created: Date.now() - 30 * DAY,
  })
  documents.set(`${path}/.well-known/agentmsg/identity`, edit(doc, keys))
  const sender: FixtureAgent = { id, keys, signer: ed25519Signer(keys, `${id}#k1`) }
  return { id, doc, sender }
}

/** An inbox that records the error messages it would send. */
async function replyingInbox(options: Partial<InboxHandlerOptions>) {
  const replies: Array<{ message: Message; to: Parameters<ErrorReplySender['send']>[1] }> = []
  const inbox = await startInbox({
    errorReplies: {
      send: async (message, to) => {
        replies.push({ message, to })
      },
    },
    ...options,
  })
  return { inbox, replies }
}

/**
 * Its resolver is an IdentityDocumentCache alone: URL agents only, and error replies find the
 * documents through its `document()`.
 */
async function urlInbox() {
  const { ca } = await testCertificate()
  return replyingInbox({ resolver: new IdentityDocumentCache({ fetch: testFetcher(ca) }) })
}

function replyData(reply: { message: Message }) {
  const part = (reply.message as Message).body.parts[0] as {
    type: 'data'
    data: { code: string; ref_message_id: string }
  }
  return part.data
}

describe('URL agents, keys from identity documents', () => {
  it('202 at level 2 for an active key', async () => {
    const { inbox } = await urlInbox()
    const { sender } = await urlAgent()
    const m = await signedMessage(sender, inbox.agentId)
    expect((await post(inbox.inboxUrl, m)).status).toBe(202)
    await until(() => inbox.received.length === 1)
    expect(inbox.received[0]!.info).toMatchObject({
      level: 2,
      source: 'identity-document',
      keyId: `${sender.id}#k1`,
    })
  })

  it('401 key_revoked, explained, with one error message to the inbox of the agent’s own document', async () => {
    const { inbox, replies } = await urlInbox()
    const { id, sender } = await urlAgent((doc) => revokeKey(doc, 'k1'))
    const m = await signedMessage(sender, inbox.agentId, {
      relays: ['https://relay.attacker.example'],
    })
    const r = await post(inbox.inboxUrl, m)
    expect(r.status).toBe(401)
    expect(r.json.code).toBe('key_revoked')
    expect(r.json.message).toMatch(/k1.*revoked/)
    await until(() => replies.length === 1)
    const [reply] = replies
    // Never a URL from the message: the document's inbox, and no relays.
    expect(reply!.to).toEqual({ agent: id, inbox: `${id}/.well-known/agentmsg/inbox` })
    expect(reply!.message).toMatchObject({
      phase: 'error',
      from: { agent: inbox.agentId },
      to: { agent: id },
    })
    expect(reply!.message.conversation_id).toBe(m.conversation_id)
    expect(replyData(reply!)).toMatchObject({ code: 'key_revoked', ref_message_id: m.message_id })
    // At most one a minute per peer.
    expect((await post(inbox.inboxUrl, await signedMessage(sender, inbox.agentId))).json.code).toBe(
      'key_revoked',
    )
    await new Promise((res) => setTimeout(res, 50))
    expect(replies).toHaveLength(1)
    expect(inbox.received).toHaveLength(0)
  })

  it('401 key_revoked for a key retired past its transition period', async () => {
    const { inbox } = await urlInbox()
    const next = await generateKeyPair()
    const { sender } = await urlAgent((doc) =>
      rotateKey(doc, { publicKey: next.publicKey, keyId: 'k2' }, { now: Date.now() - 15 * DAY }),
    )
    const backdated = Date.now() - 15 * DAY - 60_000
    // Signed before the retirement, but the 14-day transition period is over.
    const m = await signedMessage(sender, inbox.agentId, {}, { created: backdated })
    const r = await post(inbox.inboxUrl, m)
    expect(r.status).toBe(401)
    expect(r.json.code).toBe('key_revoked')
    expect(r.json.message).toMatch(/transition period ended/)
  })

  it('401 unknown_sender when the fetched document does not list the key', async () => {
    const { inbox, replies } = await urlInbox()
    const { id, sender } = await urlAgent()
    const stranger = { id, signer: ed25519Signer(sender.keys, `${id}#k9`) }
    const r = await post(inbox.inboxUrl, await signedMessage(stranger, inbox.agentId))
    expect(r.status).toBe(401)
    expect(r.json.code).toBe('unknown_sender')
    await until(() => replies.length === 1)
    expect(replyData(replies[0]!).code).toBe('unknown_sender')
  })

  it('503 unavailable with Retry-After while the identity server fails', async () => {
    const { inbox } = await urlInbox()
    const { sender } = await urlAgent(() => 503)
    const r = await post(inbox.inboxUrl, await signedMessage(sender, inbox.agentId))
    expect(r.status).toBe(503)
    expect(r.json.code).toBe('unavailable')
    expect(r.headers['retry-after']).toBe('30')
  })

  it('401 invalid_signature for a forgery in a URL agent’s name; the agent is told', async () => {
    const { inbox, replies } = await urlInbox()
    const { id, sender } = await urlAgent()
    const mallory = await generateKeyPair()
    const forged = await signedMessage(
      sender,
      inbox.agentId,
      {},
      { signer: ed25519Signer(mallory, `${id}#k1`) },
    )
    expect((await post(inbox.inboxUrl, forged)).json.code).toBe('invalid_signature')
    await until(() => replies.length === 1)
    expect(replies[0]!.to).toEqual({ agent: id, inbox: `${id}/.well-known/agentmsg/inbox` })
  })
})

describe('auth-level failures (PROFILE §7)', () => {
  it('401 insufficient_auth_level, and an error message to the verified sender’s relays', async () => {
    const pinned = await generateKeyPair()
    const introduced = await generateKeyPair()
    const table = new Map([
      ['carol#pin', { publicKey: pinned.publicKey, source: 'pinned' as const }],
      ['carol#intro', { publicKey: introduced.publicKey, source: 'introduction' as const }],
    ])
    const { inbox, replies } = await replyingInbox({ resolver: tableResolver(table) })
    const relays = ['https://relay.example']
    const strong = { id: 'carol', signer: ed25519Signer(pinned, 'carol#pin') }
    const weak = { id: 'carol', signer: ed25519Signer(introduced, 'carol#intro') }
    expect(
      (
        await post(
          inbox.inboxUrl,
          await signedMessage(strong, inbox.agentId, { conversationId: 'c-l', relays }),
        )
      ).status,
    ).toBe(202)
    const low = await signedMessage(weak, inbox.agentId, {
      conversationId: 'c-l',
      sequence: 1,
      relays,
    })
    expect((await post(inbox.inboxUrl, low)).json.code).toBe('insufficient_auth_level')
    await until(() => replies.length === 1)
    expect(replies[0]!.to).toEqual({ agent: 'carol', relays })
    expect(replyData(replies[0]!)).toMatchObject({
      code: 'insufficient_auth_level',
      ref_message_id: low.message_id,
    })
  })
})

describe('protocol-level errors (SPEC §7.3, PROFILE §7)', () => {
  /** A signed message whose version or phase this agent does not speak. */
  async function speaking(
    sender: FixtureAgent,
    to: string,
    patch: Partial<Message>,
  ): Promise<Message> {
    const base = createMessage({
      from: sender.id,
      to,
      conversationId: 'c-proto',
      sequence: 4,
      phase: 'request',
      text: 'hi',
      relays: ['https://relay.example'],
    })
    return signMessage({ ...base, ...patch } as Message, sender.signer)
  }

  it('202, then one error message to the verified sender; not twice a minute; never to an error', async () => {
    let clock = Date.now()
    const { inbox, replies } = await replyingInbox({ now: () => clock })
    const alice = await fixtureAgent()
    const v2 = await speaking(alice, inbox.agentId, { version: '2' })
    const r = await post(inbox.inboxUrl, v2)
    expect(r.status).toBe(202)
    expect(r.json).toEqual({ status: 'accepted', message_id: v2.message_id })
    await until(() => replies.length === 1)
    expect(replies[0]!.to).toEqual({ agent: alice.id, relays: ['https://relay.example'] })
    expect(replies[0]!.message).toMatchObject({
      phase: 'error',
      conversation_id: 'c-proto',
      sequence: 5,
      content_type: 'application/json',
    })
    expect(replyData(replies[0]!)).toEqual({
      code: 'version_mismatch',
      message: expect.any(String),
      ref_message_id: v2.message_id,
    })

    const dance = await speaking(alice, inbox.agentId, { phase: 'dance' })
    expect((await post(inbox.inboxUrl, dance)).status).toBe(202)
    await new Promise((res) => setTimeout(res, 50))
    expect(replies).toHaveLength(1)

    clock += 61_000
    const again = await speaking(alice, inbox.agentId, { phase: 'dance' })
    expect((await post(inbox.inboxUrl, again)).status).toBe(202)
    await until(() => replies.length === 2)
    expect(replyData(replies[1]!).code).toBe('unknown_phase')

    // An error phase message in another version is not answered (no loops).
    clock += 61_000
    const bob = await fixtureAgent()
    const errorV2 = await speaking(bob, inbox.agentId, { version: '2', phase: 'error' })
    expect((await post(inbox.inboxUrl, errorV2)).status).toBe(202)
    await new Promise((res) => setTimeout(res, 50))
    expect(replies).toHaveLength(2)
    // The application never sees protocol-level failures.
    expect(inbox.received).toHaveLength(0)
  })

  it('a replayed protocol-level failure is answered once, even after the gate reopens', async () => {
    let clock = Date.now()
    const { inbox, replies } = await replyingInbox({ now: () => clock })
    const alice = await fixtureAgent()
    const v2 = await speaking(alice, inbox.agentId, { version: '2' })
    expect((await post(inbox.inboxUrl, v2)).status).toBe(202)
    clock += 61_000
    expect((await post(inbox.inboxUrl, v2)).status).toBe(202)
    await until(() => replies.length === 1)
    await new Promise((res) => setTimeout(res, 50))
    expect(replies).toHaveLength(1)
  })
})
