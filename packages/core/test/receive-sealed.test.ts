import { type FixtureAgent, fixtureAgent, sealedMessage } from '@agentmsg/conformance'
/**
 * The receive pipeline's `open` step (PROFILE §8): sealed bodies are opened after verifying,
 * and refused, coded and at step `open`, when they do not open or were lifted from another
 * message, conversation or recipient. Real X25519 / XSalsa20-Poly1305, no mocks.
 */
import { describe, expect, it } from 'vitest'
import { base64urlDecode, base64urlEncode } from '../src/base64url.js'
import { createMessage } from '../src/create-message.js'
import { receive } from '../src/receive/pipeline.js'
import { createReceiver } from '../src/receive/receiver.js'
import type { ReceiveContext, ReceivedInfo } from '../src/receive/types.js'
import { ReplayGuard } from '../src/replay.js'
import { didKeyResolver } from '../src/resolver.js'
import { signMessage } from '../src/sign.js'
import { memoryStorage } from '../src/storage/memory.js'
import type { Message } from '../src/types.js'
import { bytesOf, until } from './receive-helpers.js'

type To = string | { topic: string }
let conv = 0

/** A message from `sender`, its body sealed for `recipients` and then signed (PROFILE §8). */
function sealed(
  sender: FixtureAgent,
  to: To,
  recipients: FixtureAgent[],
  text = 'sealed hello',
  conversationId = `sealed-${++conv}`,
): Promise<Message> {
  return sealedMessage(sender, to, recipients, { text, conversationId })
}

/** `message` with its body replaced, signed again by `signer` (a sender re-signing a part). */
function resign(message: Message, by: FixtureAgent, changes: Partial<Message>): Promise<Message> {
  const { security: _s, ...rest } = message
  return signMessage({ ...rest, ...changes, from: { agent: by.id } }, by.signer)
}

function ctxFor(me: FixtureAgent, options: Partial<ReceiveContext> = {}): ReceiveContext {
  const now = Date.now
  return {
    resolver: didKeyResolver(),
    replay: new ReplayGuard({ now }),
    now,
    addressee: { agent: me.id, topics: new Set(['news']) },
    opener: {
      agent: me.id,
      ed25519Seed: (keyId) => (keyId === me.signer.keyId ? me.keys.secretKey : undefined),
    },
    ...options,
  }
}

function withCiphertext(message: Message, edit: (bytes: Uint8Array) => Uint8Array): Message {
  const parts = message.body.parts.map((p) =>
    p.type === 'sealed'
      ? { ...p, ciphertext: base64urlEncode(edit(base64urlDecode(p.ciphertext))) }
      : p,
  )
  return { ...message, body: { parts } }
}

describe('receive: sealed bodies (PROFILE §8)', () => {
  it('opens a sealed body after verifying, keeping the signed original', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const m = await sealed(alice, bob.id, [bob])
    const r = await receive({ body: bytesOf(m) }, ctxFor(bob))
    expect(r.status).toBe('accepted')
    if (r.status !== 'accepted') return
    expect(r.sealed).toBe(true)
    expect(r.message.body).toEqual({ parts: [{ type: 'text', text: 'sealed hello' }] })
    expect(r.signed.body).toEqual(m.body)
    expect(r.message.security).toEqual(m.security)
  })

  it('leaves plain bodies alone', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const m = await signMessage(
      createMessage({
        from: alice.id,
        to: bob.id,
        conversationId: 'p',
        sequence: 0,
        phase: 'request',
        text: 'x',
      }),
      alice.signer,
    )
    const r = await receive({ body: bytesOf(m) }, ctxFor(bob))
    expect(r).toMatchObject({ status: 'accepted', sealed: false })
    if (r.status === 'accepted') expect(r.signed).toBe(r.message)
  })

  it('opens a topic message carrying parts for us and for others', async () => {
    const [alice, bob, carol] = await Promise.all([fixtureAgent(), fixtureAgent(), fixtureAgent()])
    const m = await sealed(alice, { topic: 'news' }, [carol, bob], 'to all')
    const r = await receive({ body: bytesOf(m) }, ctxFor(bob))
    expect(r).toMatchObject({ status: 'accepted', sealed: true })
    if (r.status === 'accepted')
      expect(r.message.body.parts).toEqual([{ type: 'text', text: 'to all' }])
  })

  it('passes a sealed body unopened where there is no addressee and no opener (a relay)', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const m = await sealed(alice, bob.id, [bob])
    const { addressee: _a, opener: _o, ...relay } = ctxFor(bob)
    const r = await receive({ body: bytesOf(m) }, relay)
    expect(r).toMatchObject({ status: 'accepted', sealed: false })
    if (r.status === 'accepted') expect(r.message.body).toEqual(m.body)
  })

  describe('refusals, coded, at step open', () => {
    async function refusal(
      build: (a: FixtureAgent, b: FixtureAgent) => Promise<Message>,
      options?: Partial<ReceiveContext>,
    ) {
      const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
      const m = await build(alice, bob)
      const r = await receive({ body: bytesOf(m) }, { ...ctxFor(bob), ...options })
      expect(r.status).toBe('refused')
      if (r.status !== 'refused') return undefined
      expect(r.step, r.error.message).toBe('open')
      expect(r.error.code).toBe('invalid_format')
      expect(r.verified).toBe(true)
      return r.error
    }

    it('a receiver without an opener', async () => {
      const e = await refusal((a, b) => sealed(a, b.id, [b]), { opener: undefined })
      expect(e?.message).toMatch(/cannot open sealed bodies/)
    })

    it('tampered ciphertext', async () => {
      const e = await refusal(async (a, b) =>
        resign(
          withCiphertext(await sealed(a, b.id, [b]), (c) => {
            c[c.length - 1] = (c[c.length - 1] as number) ^ 1
            return c
          }),
          a,
          {},
        ),
      )
      expect(e?.field).toBe('body.parts[0].ciphertext')
    })

    it('truncated ciphertext', async () => {
      await refusal(async (a, b) =>
        resign(
          withCiphertext(await sealed(a, b.id, [b]), (c) => c.subarray(0, c.length - 1)),
          a,
          {},
        ),
      )
      await refusal(async (a, b) =>
        resign(
          withCiphertext(await sealed(a, b.id, [b]), (c) => c.subarray(0, 10)),
          a,
          {},
        ),
      )
    })

    it('over-long ciphertext', async () => {
      await refusal(async (a, b) =>
        resign(
          withCiphertext(await sealed(a, b.id, [b]), (c) => new Uint8Array([...c, 0])),
          a,
          {},
        ),
      )
    })

    it("a part lifted into another sender's message", async () => {
      const mallory = await fixtureAgent()
      const e = await refusal(async (a, b) => resign(await sealed(a, b.id, [b]), mallory, {}))
      expect(e?.message).toMatch(/sealed from does not match/)
    })

    it('a part lifted into another conversation', async () => {
      const e = await refusal(async (a, b) =>
        resign(await sealed(a, b.id, [b]), a, { conversation_id: 'elsewhere' }),
      )
      expect(e?.message).toMatch(/sealed conversation_id does not match/)
    })

    it('a part only for another recipient', async () => {
      const carol = await fixtureAgent()
      const e = await refusal((a, b) => sealed(a, b.id, [carol]))
      expect(e?.message).toMatch(/no sealed part for/)
    })

    it('a part for us sealed to a key that is not ours', async () => {
      const carol = await fixtureAgent()
      await refusal(async (a, b) => {
        const m = await sealed(a, b.id, [b])
        const parts = m.body.parts.map((p) => ({ ...p, key_id: carol.signer.keyId }))
        return resign({ ...m, body: { parts } } as Message, a, {})
      })
    })
  })
})

describe('createReceiver: sealed bodies', () => {
  it('delivers the opened body with sealed: true, also after a restart', async () => {
    const [alice, bob] = await Promise.all([fixtureAgent(), fixtureAgent()])
    const storage = memoryStorage()
    const opener = {
      agent: bob.id,
      ed25519Seed: (keyId: string) => (keyId === bob.signer.keyId ? bob.keys.secretKey : undefined),
    }
    let release: () => void = () => {}
    const blocked = new Promise<void>((r) => {
      release = r
    })
    const first = createReceiver({
      agentId: bob.id,
      resolver: didKeyResolver(),
      storage,
      opener,
      onMessage: () => blocked,
    })
    const m = await sealed(alice, bob.id, [bob], 'kept')
    expect(await first.receive({ body: bytesOf(m), transport: 'relay' })).toEqual({
      status: 'accepted',
      messageId: m.message_id,
    })
    await first.close({ drain: false })
    release()
    const got: Array<{ message: Message; info: ReceivedInfo }> = []
    const second = createReceiver({
      agentId: bob.id,
      resolver: didKeyResolver(),
      storage,
      opener,
      onMessage: async (message, info) => {
        got.push({ message, info })
      },
    })
    await second.ready
    await until(() => got.length === 1)
    expect(got[0]?.info.sealed).toBe(true)
    expect(got[0]?.message.body.parts).toEqual([{ type: 'text', text: 'kept' }])
    await second.close()
  })

  it('refuses opener.agent other than agentId', async () => {
    const [bob, carol] = await Promise.all([fixtureAgent(), fixtureAgent()])
    expect(() =>
      createReceiver({
        agentId: bob.id,
        resolver: didKeyResolver(),
        opener: { agent: carol.id, ed25519Seed: () => undefined },
        onMessage: async () => {},
      }),
    ).toThrow(TypeError)
  })
})
