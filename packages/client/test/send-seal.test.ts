/**
 * Sealing on send (PROFILE §8, SPEC §5.7.2): which copies are sealed, to which key, and what
 * happens when the recipient's key is unknown. Transports written against core's contract
 * record what they were handed; the sealed bodies are opened with core's `openSealedBody` and
 * the recipient's real seed, and the signatures verified as a relay would.
 */
import {
  AgentMsgError,
  type DeliveryTarget,
  generateKeyPair,
  type IdentityDocument,
  type Message,
  type TransportFactory,
} from '@agentmsg/core'
import { createIdentityDocument, rotateKey } from '@agentmsg/core/identity'
import { chainResolvers, didKeyResolver, verifyMessage } from '@agentmsg/core/receive'
import { openSealedBody } from '@agentmsg/core/sealed-box'
import { afterEach, describe, expect, it } from 'vitest'
import { type Agent, type AgentOptions, createAgent } from '../src/index.js'

const RELAY = 'https://relay.example'
const OTHER = 'https://relay-two.example'
const BOB_URL = 'https://bob.example'

interface Sent {
  kind: string
  message: Message
  target: DeliveryTarget
}

/**
 * An inbox and a relay transport that accept everything and keep what they were given; their
 * targets as the https and relay transports make them (the inbox's confidential, a relay's
 * when every relay is trusted).
 */
function recording() {
  const sent: Sent[] = []
  const transport = (kind: 'inbox' | 'relay'): TransportFactory => ({
    protocol: kind === 'inbox' ? 'https' : 'relay',
    create: (components) => ({
      protocol: kind === 'inbox' ? 'https' : 'relay',
      targets(peer): DeliveryTarget[] {
        const { agent } = peer
        if (kind === 'inbox') {
          if (!agent.startsWith('https://')) return []
          const urls = [`${agent}/.well-known/agentmsg/inbox`]
          return [{ kind, agent, urls, route: 'direct', confidential: true, durable: true }]
        }
        const urls = [...new Set([...peer.relays, ...(peer.document?.relay?.urls ?? [])])]
        if (urls.length === 0) return []
        const confidential = urls.every((u) => components.trusts(u))
        return [{ kind, agent, urls, route: 'relay', confidential }]
      },
      async send(message, target) {
        sent.push({ kind, message, target })
        return { messageId: message.message_id, target }
      },
      async close() {},
    }),
  })
  return { sent, transports: [transport('inbox'), transport('relay')] }
}

const open: Agent[] = []
afterEach(async () => {
  for (const a of open.splice(0)) await a.close()
})

async function sender(options: AgentOptions = {}) {
  const rec = recording()
  const a = await createAgent({ transports: rec.transports, sendOnly: true, ...options })
  open.push(a)
  return { agent: a, sent: rec.sent }
}

/** A did:key recipient with its seed. */
async function didKeyPeer() {
  const keys = await generateKeyPair()
  const a = await createAgent({
    identity: { seed: keys.secretKey },
    transports: [],
    sendOnly: true,
  })
  open.push(a)
  return { id: a.id, keyId: a.identity.keyId, seed: keys.secretKey }
}

function opened(m: Message, agent: string, seed: Uint8Array) {
  return openSealedBody(m, { agent, ed25519Seed: seed })
}

describe('sealing on send', () => {
  it('through an untrusted relay by default: sealed to the did:key, signed after sealing', async () => {
    const bob = await didKeyPeer()
    const { agent: alice, sent } = await sender()
    const r = await alice.send(bob.id, 'the body', { relays: [RELAY] })
    expect(r).toMatchObject({ route: 'relay', sealed: true })
    const m = sent[0]!.message
    expect(m.body.parts).toEqual([
      expect.objectContaining({ type: 'sealed', recipient: bob.id, key_id: bob.keyId }),
    ])
    expect(m.security?.encryption).toEqual({ scheme: 'sealed_box', recipients: [bob.id] })
    expect(JSON.stringify(m)).not.toContain('the body')
    // Relays and recipients verify the sealed message without opening it (PROFILE §8).
    await expect(verifyMessage(m, chainResolvers(didKeyResolver()))).resolves.toMatchObject({
      keyId: alice.identity.keyId,
    })
    expect((await opened(m, bob.id, bob.seed)).parts).toEqual([{ type: 'text', text: 'the body' }])
  })

  it('trusted and self-operated relays get plaintext; one untrusted relay among them seals', async () => {
    const bob = await didKeyPeer()
    const { agent: alice, sent } = await sender({
      relayTrust: { [RELAY]: 'trusted', [`${OTHER}/`]: 'self-operated' },
    })
    expect((await alice.send(bob.id, 'a', { relays: [RELAY] })).sealed).toBe(false)
    expect((await alice.send(bob.id, 'b', { relays: [OTHER] })).sealed).toBe(false)
    const third = 'https://relay-three.example'
    expect((await alice.send(bob.id, 'c', { relays: [RELAY, third] })).sealed).toBe(true)
    expect(sent.map((s) => s.message.body.parts[0]!.type)).toEqual(['text', 'text', 'sealed'])
  })

  it('seal: false sends plaintext through an untrusted relay; seal: true seals a direct delivery', async () => {
    const bob = await didKeyPeer()
    const { agent: alice, sent } = await sender({ resolveIdentity: async () => doc(BOB_URL) })
    expect((await alice.send(bob.id, 'plain', { relays: [RELAY], seal: false })).sealed).toBe(false)
    expect(sent[0]!.message.body.parts).toEqual([{ type: 'text', text: 'plain' }])

    // A URL agent's inbox: not sealed by default (TLS to the recipient), sealed when asked.
    const direct = await alice.send(BOB_URL, 'direct')
    expect(direct).toMatchObject({ route: 'direct', sealed: false })
    const asked = await alice.send(BOB_URL, 'direct, sealed', { seal: true })
    expect(asked).toMatchObject({ route: 'direct', sealed: true })
    const m = sent.at(-1)!.message
    expect(m.body.parts[0]).toMatchObject({ type: 'sealed', key_id: `${BOB_URL}#${bobKey.id}` })
    expect((await opened(m, BOB_URL, bobKey.seed)).parts).toEqual([
      { type: 'text', text: 'direct, sealed' },
    ])
  })

  it("a URL agent's newest active key from its document; a retired one is not used", async () => {
    const next = await generateKeyPair()
    const rotated = rotateKey(doc(BOB_URL).document, { publicKey: next.publicKey, keyId: 'k2' })
    const { agent: alice, sent } = await sender({
      resolveIdentity: async () => ({ status: 'ok', document: rotated }),
    })
    await alice.send(BOB_URL, 'to the new key', { route: 'relay', relays: [RELAY] })
    const m = sent[0]!.message
    expect(m.body.parts[0]).toMatchObject({ key_id: `${BOB_URL}#k2` })
    expect((await opened(m, BOB_URL, next.secretKey)).parts[0]).toEqual({
      type: 'text',
      text: 'to the new key',
    })
    await expect(opened(m, BOB_URL, bobKey.seed)).rejects.toThrow(AgentMsgError)
  })

  it('an unknown key: a relay-only send fails not_found, unless plaintext is allowed', async () => {
    const { agent: alice, sent } = await sender({
      resolveIdentity: async () => ({ status: 'unavailable', reason: 'down' }),
    })
    const send = (options: object) =>
      alice.send(BOB_URL, 'secret', { route: 'relay', relays: [RELAY], ...options })
    await expect(send({})).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/cannot seal for https:\/\/bob\.example.*allowPlaintext/),
    })
    await expect(send({ seal: true })).rejects.toMatchObject({ code: 'not_found' })
    expect(sent).toEqual([])
    expect(await send({ allowPlaintext: true })).toMatchObject({ route: 'relay', sealed: false })
    expect(sent[0]!.message.body.parts).toEqual([{ type: 'text', text: 'secret' }])
  })

  it('an unknown key on the auto route: the untrusted relay is left out, the inbox keeps it', async () => {
    const { agent: alice, sent } = await sender({
      resolveIdentity: async () => ({ status: 'unavailable', reason: 'down' }),
    })
    const r = await alice.send(BOB_URL, 'secret', { relays: [RELAY] })
    expect(r).toMatchObject({ route: 'direct', sealed: false })
    expect(sent.map((s) => s.kind)).toEqual(['inbox'])
  })

  it('a pinned key is used when the document cannot be had', async () => {
    const { agent: alice, sent } = await sender({
      resolveIdentity: async () => ({ status: 'unavailable', reason: 'down' }),
    })
    await alice.contacts.pin(BOB_URL, bobKey.publicKey, { keyId: bobKey.id })
    expect((await alice.send(BOB_URL, 'pinned', { route: 'relay', relays: [RELAY] })).sealed).toBe(
      true,
    )
    expect((await opened(sent[0]!.message, BOB_URL, bobKey.seed)).parts[0]).toMatchObject({
      text: 'pinned',
    })
  })

  it('relayTrust is checked when the agent is created', async () => {
    await expect(sender({ relayTrust: { [RELAY]: 'mostly' as 'trusted' } })).rejects.toThrow(
      /must be 'untrusted', 'trusted' or 'self-operated'/,
    )
    await expect(sender({ relayTrust: { 'http://relay.example': 'trusted' } })).rejects.toThrow(
      AgentMsgError,
    )
  })
})

/** Bob, a URL agent, and the seed of its first key. */
const bobKey = await (async () => {
  const keys = await generateKeyPair()
  return { id: 'k1', seed: keys.secretKey, publicKey: keys.publicKey }
})()

function doc(agentId: string): { status: 'ok'; document: IdentityDocument } {
  return {
    status: 'ok',
    document: createIdentityDocument({
      agentId,
      publicKey: bobKey.publicKey,
      keyId: bobKey.id,
      created: Date.now() - 60_000,
    }),
  }
}
