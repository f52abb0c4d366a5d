/**
 * Attack: a third agent who knows the id of alice's conversation with bob
 * sends alice messages in it with sequence numbers near 2^53−1. Conversation state is kept per
 * (peer, conversation), so alice's numbering with bob does not move and her sends keep working.
 * The agents meet on the in-process memory transport of @agentmsg/conformance.
 */
import { createMemoryHub, fixtureAgent, memoryTransport } from '@agentmsg/conformance/portable'
import { createMessage, memoryStorage, signMessage } from '@agentmsg/core'
import { utf8Encode } from '@agentmsg/core/http'
import { afterEach, describe, expect, it } from 'vitest'
import { type Agent, createAgent } from '../src/index.js'
import { collect } from './collect.js'

const open: Agent[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
})

describe('attack: pushing a conversation’s sequence from outside', () => {
  it('mallory sends sequence 2^53−2 and 2^53−1 in alice↔bob’s conversation: alice and bob carry on', async () => {
    const hub = createMemoryHub()
    const start = async () => {
      const a = await createAgent({ transports: [memoryTransport(hub)], storage: memoryStorage() })
      open.push(a)
      return a
    }
    const alice = await start()
    const bob = await start()
    const atAlice = collect(alice, 'message')
    const atBob = collect(bob, 'message')

    const hello = await alice.send(bob.id, 'hello bob')
    const first = await atBob.nth(1)
    await bob.reply(first, 'hello alice')
    expect((await atAlice.nth(1)).message.sequence).toBe(1)

    // Mallory learned the conversation id (it is no secret: relays and logs see it) and
    // delivers signed messages of her own in it to alice.
    const mallory = await fixtureAgent()
    const deliver = hub.agents.get(alice.id)!
    for (const sequence of [2 ** 53 - 2, 2 ** 53 - 1]) {
      const message = await signMessage(
        createMessage({
          from: mallory.id,
          to: alice.id,
          conversationId: hello.conversationId,
          sequence,
          phase: 'request',
          text: 'let me number this',
        }),
        mallory.signer,
      )
      const outcome = await deliver({
        body: utf8Encode(JSON.stringify(message)),
        transport: 'memory',
      })
      expect(outcome.status).toBe('accepted')
    }
    expect((await atAlice.nth(3)).message.sequence).toBe(2 ** 53 - 1)

    // Alice's conversation with bob goes on where it was, both ways.
    await alice.send(bob.id, 'still there?', { conversationId: hello.conversationId })
    const next = await atBob.nth(2)
    expect(next.message.sequence).toBe(2)
    await bob.reply(next, 'yes')
    expect((await atAlice.nth(4)).message.sequence).toBe(3)
    await alice.reply(await atAlice.nth(4), 'good')
    expect((await atBob.nth(3)).message.sequence).toBe(4)
  })
})
