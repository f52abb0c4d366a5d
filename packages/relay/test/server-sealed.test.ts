/**
 * A relay stores sealed messages as they are (PROFILE §8, §9): it verifies the signature, which
 * covers the sealed parts, and never opens them; the recipient retrieves the same ciphertext.
 */

import { fixtureAgent } from '@agentmsg/conformance'
import { createMessage, type Message, signMessage } from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { verifyMessage } from '@agentmsg/core/receive'
import { sealBody } from '@agentmsg/core/sealed-box'
import { describe, expect, it } from 'vitest'
import { aliceAndBob, relayPerTest } from './helpers.js'

const { start } = relayPerTest()

describe('publish of a sealed message', () => {
  it('is accepted (202) and retrieved unchanged', async () => {
    const relay = await start()
    const { client, alice, bob } = await aliceAndBob(relay)
    const carol = await fixtureAgent()
    const unsigned = createMessage({
      from: alice.id,
      to: bob.id,
      conversationId: 'sealed-relay',
      sequence: 0,
      phase: 'request',
      text: 'the relay must not read this',
    })
    const { body } = await sealBody(
      // createMessage's UnsignedMessage (an Omit of the Message union) is not a SealableMessage
      unsigned as Message,
      [bob, carol].map((r) => ({
        agent: r.id,
        keyId: r.signer.keyId,
        publicKey: r.keys.publicKey,
      })),
    )
    const msg = await signMessage({ ...unsigned, body }, alice.signer)

    const res = await client.publish(msg)
    expect(res.status).toBe(202)
    expect(await res.json()).toEqual({ status: 'accepted', message_id: msg.message_id })

    const page = await client.retrieve(bob)
    expect(page.messages).toHaveLength(1)
    const got = page.messages[0]!
    expect(got.body).toEqual(msg.body)
    expect(JSON.stringify(got)).not.toContain('the relay must not read this')
    const { trace: _trace, ...signed } = got
    expect(signed).toEqual(msg)
    expect((await verifyMessage(got, createKeyResolver())).keyId).toBe(alice.signer.keyId)
  })
})
