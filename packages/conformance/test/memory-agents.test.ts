/**
 * The example memory transport between two real agents: `createAgent({ transports:
 * [memoryTransport(hub)] })` on both sides, messages both ways through the one receive
 * pipeline (verified at level 3 for did:key), a reply in the same conversation, and a forgery
 * handed straight to the hub refused by the pipeline, not the transport.
 */
import { type Agent, createAgent, type ReceivedMessage } from '@agentmsg/client'
import {
  createMemoryHub,
  fixtureAgent,
  memoryTransport,
  signedMessage,
} from '@agentmsg/conformance'
import { afterEach, describe, expect, it } from 'vitest'

const agents: Agent[] = []
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()))
})

async function agentOn(hub: ReturnType<typeof createMemoryHub>): Promise<Agent> {
  const agent = await createAgent({ transports: [memoryTransport(hub)] })
  agents.push(agent)
  return agent
}

/** The next message `agent` hands to the application. */
function nextMessage(agent: Agent): Promise<ReceivedMessage> {
  return new Promise((resolve) => {
    const off = agent.on('message', (m) => {
      off()
      resolve(m)
    })
  })
}

/** A did:key agent's message as the application sees it over the memory transport (level 3). */
function arrived(from: string, text: string, conversationId: string) {
  return { from, text, level: 3, transport: 'memory', conversationId }
}

describe('memoryTransport between two agents', () => {
  it('carries a message and its reply, verified at level 3, in one conversation', async () => {
    const hub = createMemoryHub()
    const alice = await agentOn(hub)
    const bob = await agentOn(hub)

    const atBob = nextMessage(bob)
    const sent = await alice.send(bob.id, 'hello bob')
    expect(sent).toMatchObject({ transport: 'memory' })
    const got = await atBob
    expect(got).toMatchObject(arrived(alice.id, 'hello bob', sent.conversationId))
    expect(got.message.message_id).toBe(sent.messageId)

    const atAlice = nextMessage(alice)
    const replied = await bob.reply(got, 'hello alice')
    expect(replied).toMatchObject({ transport: 'memory', conversationId: sent.conversationId })
    const answer = await atAlice
    expect(answer).toMatchObject(arrived(bob.id, 'hello alice', sent.conversationId))
    expect(answer.message.phase).toBe('response')
    expect(answer.message.sequence).toBeGreaterThan(got.message.sequence)
  })

  it('leaves checking to the pipeline: a forged or repeated message is refused', async () => {
    const hub = createMemoryHub()
    const bob = await agentOn(hub)
    const mallory = await fixtureAgent()
    const alice = await fixtureAgent()
    const receive = hub.agents.get(bob.id)!
    const genuine = await signedMessage(alice, bob.id, { text: 'pay alice' })
    const forged = { ...genuine, body: { parts: [{ type: 'text', text: 'pay mallory' }] } }
    const deliver = (m: unknown) =>
      receive({ body: new TextEncoder().encode(JSON.stringify(m)), transport: 'memory' })
    expect(await deliver(forged)).toMatchObject({
      status: 'refused',
      error: { code: 'invalid_signature' },
    })
    expect(await deliver(await signedMessage(mallory, (await fixtureAgent()).id))).toMatchObject({
      status: 'refused',
      error: { code: 'invalid_format' },
    })
    const atBob = nextMessage(bob)
    expect(await deliver(genuine)).toEqual({ status: 'accepted', messageId: genuine.message_id })
    expect((await atBob).text).toBe('pay alice')
    expect(await deliver(genuine)).toEqual({ status: 'duplicate', messageId: genuine.message_id })
  })

  it('reaches only agents on the same hub', async () => {
    const alice = await agentOn(createMemoryHub())
    const bob = await agentOn(createMemoryHub())
    await expect(alice.send(bob.id, 'hello?')).rejects.toThrow()
  })
})
