/**
 * Sealed bodies arriving at an agent (PROFILE §8): the agent opens them with its own key and
 * says so (`sealed: true`, `text` of the opened body); a part it cannot open is a coded refusal
 * reported as an error event, never a crash, and so is an opened body that §2 would refuse in the
 * clear (the application never sees it). Two agents on the in-process memory transport; the
 * sealed message is built by hand (`sealedMessage`: sealBody, then signMessage).
 */
import {
  createMemoryHub,
  fixtureAgent,
  memoryTransport,
  sealedMessage,
} from '@agentmsg/conformance'
import type { BodyPart, Message } from '@agentmsg/core'
import { utf8Encode } from '@agentmsg/core/http'
import { afterEach, describe, expect, it } from 'vitest'
import { type Agent, createAgent } from '../src/index.js'
import { collect } from './collect.js'

const open: Agent[] = []
afterEach(async () => {
  for (const a of open.splice(0)) await a.close()
})

async function setup() {
  const hub = createMemoryHub()
  const [aliceKeys, bobKeys, carolKeys] = await Promise.all([
    fixtureAgent(),
    fixtureAgent(),
    fixtureAgent(),
  ])
  const alice = await createAgent({
    identity: { seed: aliceKeys.keys.secretKey },
    transports: [memoryTransport(hub)],
  })
  const bob = await createAgent({
    identity: { seed: bobKeys.keys.secretKey },
    transports: [memoryTransport(hub)],
  })
  open.push(alice, bob)
  expect(bob.id).toBe(bobKeys.id)
  /** A message from Alice to Bob, sealed for `recipients`, then signed by Alice. */
  const sealedToBob = (text: string, recipients = [bobKeys]): Promise<Message> => {
    return sealedMessage(aliceKeys, bob.id, recipients, {
      conversationId: `sealed-${text.replaceAll(' ', '-')}`,
      text,
    })
  }
  const deliver = (m: Message) => {
    const receive = hub.agents.get(bob.id)
    if (!receive) throw new Error('bob is not listening')
    return receive({ body: utf8Encode(JSON.stringify(m)), transport: 'memory' })
  }
  return { alice, bob, aliceKeys, bobKeys, carolKeys, sealedToBob, deliver }
}

describe('agent: receiving sealed bodies', () => {
  it('opens with its own key and delivers sealed: true with the text', async () => {
    const { alice, bob, sealedToBob, deliver } = await setup()
    const messages = collect(bob, 'message')
    const m = await sealedToBob('for bob only')
    expect(await deliver(m)).toEqual({ status: 'accepted', messageId: m.message_id })
    const got = await messages.nth(1)
    expect(got.sealed).toBe(true)
    expect(got.text).toBe('for bob only')
    expect(got.from).toBe(alice.id)
    expect(got.message.body.parts).toEqual([{ type: 'text', text: 'for bob only' }])

    await alice.send(bob.id, 'plain')
    const plain = await messages.nth(2)
    expect(plain.sealed).toBe(false)
    expect(plain.text).toBe('plain')
  })

  it('refuses, coded, a part only for another recipient', async () => {
    const { bob, carolKeys, sealedToBob, deliver } = await setup()
    const messages = collect(bob, 'message')
    const errors = collect(bob, 'error')
    const outcome = await deliver(await sealedToBob('for carol', [carolKeys]))
    expect(outcome.status).toBe('refused')
    if (outcome.status === 'refused') {
      expect(outcome.error.code).toBe('invalid_format')
      expect(outcome.retry).toBe(false)
    }
    await errors.nth(1)
    expect(messages.seen).toHaveLength(0)
  })

  it('refuses, coded, an opened body §2 refuses in the clear; the application never sees it', async () => {
    const { bob, aliceKeys, bobKeys, deliver } = await setup()
    const messages = collect(bob, 'message')
    const bodies = [
      [{ type: 'text', text: 42 }],
      [{ type: 'evil', payload: '<script>alert(1)</script>' }],
      [{ type: 'text' }],
      [{ type: 'sealed', recipient: bob.id, key_id: bobKeys.signer.keyId, ciphertext: 'AA' }],
    ]
    for (const parts of bodies) {
      const m = await sealedMessage(aliceKeys, bob.id, [bobKeys], { parts: parts as BodyPart[] })
      const outcome = await deliver(m)
      expect(outcome, JSON.stringify(parts)).toMatchObject({
        status: 'refused',
        error: { code: 'invalid_format' },
        retry: false,
      })
    }
    const fine = await sealedMessage(aliceKeys, bob.id, [bobKeys], { text: 'fine' })
    expect(await deliver(fine)).toEqual({ status: 'accepted', messageId: fine.message_id })
    expect((await messages.nth(1)).text).toBe('fine')
    expect(messages.seen).toHaveLength(1)
  })
})
