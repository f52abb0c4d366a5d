/**
 * Attack (issue 9, item 19): publish a validly signed message whose `sequence` is written
 * `1.0`, `1e0`, … JCS prints those as `1`, so the signature made over `"sequence":1` verifies,
 * and a relay that stored the text would hand every subscriber a float. PROFILE §1: integer
 * fields are written without fraction or exponent → 400 `invalid_format`, nothing stored.
 * Against a real relay on loopback, default settings.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { createKeyResolver } from '@agentmsg/core/identity'
import { verifyMessage } from '@agentmsg/core/receive'
import { describe, expect, it } from 'vitest'
import { aliceAndBob, relayPerTest } from './helpers.js'

const { start } = relayPerTest()

describe('attack: integer fields written with a fraction or exponent (relay publish)', () => {
  it('refuses sequence written 1.0, 1e0, 1E0, 10e-1; stores only the plain one', async () => {
    const relay = await start()
    const { client, alice, bob } = await aliceAndBob(relay)
    const m = await signedMessage(alice, bob.id, { sequence: 1 })
    const text = JSON.stringify(m)
    expect(text.split('"sequence":1,').length).toBe(2)
    for (const n of ['1.0', '1e0', '1E0', '10e-1']) {
      const res = await client.publish(text.replace('"sequence":1,', `"sequence":${n},`))
      expect(res.status).toBe(400)
      const body = (await res.json()) as { code: string; message: string }
      expect(body.code).toBe('invalid_format')
      expect(body.message).toMatch(/^sequence: /)
      expect(body.message).toContain(`${n} is not an integer`)
    }
    expect((await client.retrieve(bob)).messages).toEqual([])
    expect((await client.publish(text)).status).toBe(202)
    const page = await client.retrieve(bob)
    expect(page.messages.map((x) => x.message_id)).toEqual([m.message_id])
  })

  it('a 1.0 inside body data is fine, and the stored message still verifies', async () => {
    const relay = await start()
    const { client, bob } = await aliceAndBob(relay)
    const m = await signedMessage(await fixtureAgent(), bob.id, {
      parts: [{ type: 'data', data: { sequence: 1, ttl_seconds: 2 } }],
    })
    const text = JSON.stringify(m)
    const data = '{"sequence":1,"ttl_seconds":2}'
    expect(text).toContain(data)
    const res = await client.publish(text.replace(data, '{"sequence":1.0,"ttl_seconds":2e0}'))
    expect(res.status).toBe(202)
    const [got] = (await client.retrieve(bob)).messages
    expect(got?.message_id).toBe(m.message_id)
    expect((await verifyMessage(got!, createKeyResolver())).signatures).toHaveLength(1)
  })
})
