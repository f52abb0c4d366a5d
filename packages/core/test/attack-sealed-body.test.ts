/**
 * Attack: a sender seals a body that §2 would refuse in the clear (a number as `text`, an
 * unknown part type carrying markup, a sealed part inside the sealed body, …). PROFILE §8: the
 * opened body is validated as §2 validates any body, within §2's depth and size, else
 * `invalid_format` at step `open`, and the application never sees it. Real X25519 sealing for a
 * real recipient; the receiver is `createReceiver`, whose `onMessage` is the application.
 */
import { type FixtureAgent, fixtureAgent, sealedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../src/base64url.js'
import { utf8Encode } from '../src/bytes.js'
import { PROFILE } from '../src/profile.js'
import { receive } from '../src/receive/pipeline.js'
import { createReceiver } from '../src/receive/receiver.js'
import { ReplayGuard } from '../src/replay.js'
import { didKeyResolver } from '../src/resolver.js'
import { cryptoBoxSeal } from '../src/sealed-box/primitives.js'
import { signMessage } from '../src/sign.js'
import type { BodyPart, Message } from '../src/types.js'
import { ed25519PublicKeyToX25519 } from '../src/x25519.js'
import { bytesOf } from './receive-helpers.js'

const opener = (me: FixtureAgent) => ({
  agent: me.id,
  ed25519Seed: (keyId: string) => (keyId === me.signer.keyId ? me.keys.secretKey : undefined),
})

async function received(me: FixtureAgent, m: Message) {
  const now = Date.now
  return receive(
    { body: bytesOf(m) },
    {
      resolver: didKeyResolver(),
      replay: new ReplayGuard({ now }),
      now,
      addressee: { agent: me.id },
      opener: opener(me),
    },
  )
}

/** A message from `a` to `b` whose body, sealed for `b`, holds `parts` (unchecked). */
const sealedParts = (a: FixtureAgent, b: FixtureAgent, parts: unknown[]) =>
  sealedMessage(a, b.id, [b], { parts: parts as BodyPart[] })

/** A message sealed for `b` whose plaintext is `body` written as JSON text by hand. */
async function sealedText(a: FixtureAgent, b: FixtureAgent, body: string): Promise<Message> {
  const m = await sealedMessage(a, b.id, [b])
  const { from, to, message_id, conversation_id } = m
  const head = JSON.stringify({ from, to, recipient: b.id, message_id, conversation_id })
  const plaintext = utf8Encode(`${head.slice(0, -1)},"body":${body}}`)
  const ciphertext = base64urlEncode(
    await cryptoBoxSeal(plaintext, ed25519PublicKeyToX25519(b.keys.publicKey)),
  )
  const part = { type: 'sealed', recipient: b.id, key_id: b.signer.keyId, ciphertext } as const
  const { security, ...rest } = m
  return signMessage(
    {
      ...rest,
      body: { parts: [part] },
      security: { signatures: [], encryption: security?.encryption },
    } as Message,
    a.signer,
  )
}

const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)])

const MALFORMED: Array<[string, unknown[], string]> = [
  ['a text part whose text is a number', [{ type: 'text', text: 42 }], 'body.parts[0].text'],
  ['a text part without text', [{ type: 'text' }], 'body.parts[0].text'],
  ['an unknown part type', [{ type: 'evil', payload: '<script>x</script>' }], 'body.parts[0].type'],
  ['a data part without data', [{ type: 'data' }], 'body.parts[0].data'],
  ['a part that is not an object', ['hello'], 'body.parts[0]'],
  ['a part without a type', [{ text: 'x' }], 'body.parts[0].type'],
  [
    'a sealed part inside the sealed body',
    [
      {
        type: 'sealed',
        recipient: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
        key_id: 'k',
        ciphertext: 'AA',
      },
    ],
    'body.parts[0].type',
  ],
]

describe('attack: sealed bodies that §2 refuses in the clear (PROFILE §8)', () => {
  it.each(MALFORMED)('%s → invalid_format at step open', async (_, parts, field) => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const r = await received(bob, await sealedParts(alice, bob, parts))
    expect(r).toMatchObject({ status: 'refused', step: 'open', verified: true })
    if (r.status === 'refused')
      expect([r.error.code, r.error.field]).toEqual(['invalid_format', field])
  })

  it('a body that is not an object, or has no parts array', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    for (const body of ['"text"', '{"parts":{}}', '{}']) {
      const r = await received(bob, await sealedText(alice, bob, body))
      expect(r, body).toMatchObject({ status: 'refused', step: 'open' })
      if (r.status === 'refused') expect(r.error.code).toBe('invalid_format')
    }
  })

  it('depth: §1’s 64 levels of the message, counted as if the body had arrived in the clear', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    // message 1, body 2, parts 3, part 4, then the data: 60 arrays reach 64, 61 go beyond.
    const at = (arrays: number) => sealedParts(alice, bob, [{ type: 'data', data: nested(arrays) }])
    expect(await received(bob, await at(60))).toMatchObject({ status: 'accepted', sealed: true })
    expect(await received(bob, await at(61))).toMatchObject({ status: 'refused', step: 'open' })
  })

  it('size: the opened message’s canonical form stays within §6’s limit', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    // `1e15` is 4 characters sealed and 16 in canonical form: the sealed message is small, the
    // opened one is not.
    const body = (n: number) => `{"parts":[{"type":"data","data":[${Array(n).fill('1e15')}]}]}`
    const under = await received(bob, await sealedText(alice, bob, body(55_000)))
    expect(under).toMatchObject({ status: 'accepted', sealed: true })
    const over = await sealedText(alice, bob, body(70_000))
    expect(bytesOf(over).byteLength).toBeLessThan(PROFILE.maxMessageBytes / 2)
    const r = await received(bob, over)
    expect(r).toMatchObject({ status: 'refused', step: 'open' })
    if (r.status === 'refused')
      expect([r.error.code, r.error.field]).toEqual(['invalid_format', 'body'])
  })

  it('the application never sees them; a valid sealed body still reaches it', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const seen: Message[] = []
    const receiver = createReceiver({
      agentId: bob.id,
      resolver: didKeyResolver(),
      opener: opener(bob),
      onMessage: async (m) => {
        seen.push(m)
      },
    })
    for (const [name, parts] of MALFORMED) {
      const outcome = await receiver.receive({
        body: bytesOf(await sealedParts(alice, bob, parts)),
        transport: 'https',
      })
      expect(outcome, name).toMatchObject({ status: 'refused', error: { code: 'invalid_format' } })
    }
    const good = await sealedParts(alice, bob, [
      { type: 'text', text: 'fine' },
      { type: 'data', data: null },
    ])
    expect(await receiver.receive({ body: bytesOf(good), transport: 'https' })).toEqual({
      status: 'accepted',
      messageId: good.message_id,
    })
    await receiver.close()
    expect(seen.map((m) => m.body.parts)).toEqual([
      [
        { type: 'text', text: 'fine' },
        { type: 'data', data: null },
      ],
    ])
  })
})
