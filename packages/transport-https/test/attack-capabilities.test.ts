/**
 * Issue 9, item 10: the capabilities document advertised `encryption: ["sealed_box"]` while
 * nothing seals or opens one, inviting senders to seal messages this agent cannot read.
 * PROFILE §10's document advertises only what the receiver opens: `sealed_box` once it has the
 * agent's seeds (PROFILE §8), and then a sealed message really opens. A real inbox on loopback.
 */
import { fixtureAgent, sealedMessage } from '@agentmsg/conformance'
import { afterEach, describe, expect, it } from 'vitest'
import { post, send, startInbox, stopInboxes, until } from './inbox-helpers.js'

afterEach(stopInboxes)

const capabilities = (url: string) =>
  send(`${url}/.well-known/agentmsg/capabilities`, { method: 'GET' })

describe('attack: capabilities advertise only what the receiver opens', () => {
  it('a default inbox (no opener) → no sealed_box, and a sealed message is refused', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const inbox = await startInbox({ agentId: bob.id })
    const res = await capabilities(inbox.url)
    expect(res.status).toBe(200)
    expect(res.json.agent_id).toBe(inbox.agentId)
    expect(res.json.encryption).toEqual([])
    expect(res.text).not.toContain('sealed')
    const r = await post(inbox.inboxUrl, await sealedMessage(alice, bob.id, [bob]))
    expect(r.status).toBe(400)
    expect(r.json).toMatchObject({ code: 'invalid_format' })
  })

  it('an inbox given the opener → sealed_box, and a sealed message opens', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const seeds = new Map([[bob.signer.keyId, bob.keys.secretKey]])
    const inbox = await startInbox({
      agentId: bob.id,
      opener: { agent: bob.id, ed25519Seed: (keyId) => seeds.get(keyId) },
    })
    expect((await capabilities(inbox.url)).json.encryption).toEqual(['sealed_box'])
    const m = await sealedMessage(alice, bob.id, [bob], { text: 'opened at the inbox' })
    expect((await post(inbox.inboxUrl, m)).status).toBe(202)
    await until(() => inbox.received.length === 1)
    expect(inbox.received[0]!.message.body.parts).toEqual([
      { type: 'text', text: 'opened at the inbox' },
    ])
    expect(inbox.received[0]!.info).toMatchObject({ sealed: true })
  })

  it('encryption can be stated for a shared receiver', async () => {
    const inbox = await startInbox({ receive: async () => ({ status: 'accepted' }) as never })
    expect((await capabilities(inbox.url)).json.encryption).toEqual([])
    const stated = await startInbox({
      receive: async () => ({ status: 'accepted' }) as never,
      encryption: ['sealed_box'],
    })
    expect((await capabilities(stated.url)).json.encryption).toEqual(['sealed_box'])
  })
})
