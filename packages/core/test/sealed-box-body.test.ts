/**
 * PROFILE §8 sealed bodies: the plaintext binds from/to/message_id/conversation_id/recipient; a
 * part for another recipient is skipped; every refusal is a coded `invalid_format` error.
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import sodium from 'libsodium-wrappers'
import { beforeAll, describe, expect, it } from 'vitest'
import { base64urlDecode, base64urlEncode } from '../src/base64url.js'
import { canonicalize } from '../src/jcs.js'
import { isSealedBody } from '../src/message.js'
import { openSealedBody, type SealableMessage, sealBody } from '../src/sealed-box/body.js'
import { ed25519PublicKeyToX25519, ed25519SeedToX25519SecretKey } from '../src/x25519.js'

interface Party {
  agent: string
  keyId: string
  seed: Uint8Array
  publicKey: Uint8Array
}

function party(name: string): Party {
  const seed = crypto.getRandomValues(new Uint8Array(32))
  const agent = `https://${name}.example/agent`
  return { agent, keyId: `${agent}#k1`, seed, publicKey: ed25519.getPublicKey(seed) }
}

const alice = party('alice')
const bob = party('bob')
const carol = party('carol')
const mallory = party('mallory')

const recipient = (p: Party) => ({ agent: p.agent, keyId: p.keyId, publicKey: p.publicKey })
const opener = (p: Party) => ({ agent: p.agent, ed25519Seed: p.seed })

function message(overrides: Partial<SealableMessage> = {}): SealableMessage {
  return {
    from: { agent: alice.agent },
    to: { topic: 'https://relay.example/topics/t1' },
    message_id: 'm-1',
    conversation_id: 'c-1',
    body: { parts: [{ type: 'text', text: 'the marker plaintext words' }] },
    ...overrides,
  }
}

async function sealed(m: SealableMessage, to: Party[]): Promise<SealableMessage> {
  return { ...m, body: (await sealBody(m, to.map(recipient))).body }
}

async function expectRefused(fn: () => unknown, message: RegExp, field?: string): Promise<void> {
  await expect((async () => fn())()).rejects.toThrow(
    expect.objectContaining({
      code: 'invalid_format',
      message: expect.stringMatching(message),
      ...(field === undefined ? {} : { field }),
    }),
  )
}

beforeAll(async () => {
  await sodium.ready
})

describe('sealBody / openSealedBody (PROFILE §8)', () => {
  it('seals one part per recipient, each opening to the original body for its recipient', async () => {
    const m = message()
    const { body, encryption } = await sealBody(m, [recipient(bob), recipient(carol)])
    expect(encryption).toEqual({ scheme: 'sealed_box', recipients: [bob.agent, carol.agent] })
    expect(body.parts.map((p) => [p.type, p.recipient, p.key_id])).toEqual([
      ['sealed', bob.agent, bob.keyId],
      ['sealed', carol.agent, carol.keyId],
    ])
    expect(JSON.stringify(body)).not.toContain('marker plaintext')
    expect(isSealedBody(body)).toBe(true)
    expect(isSealedBody(m.body)).toBe(false)
    const s = { ...m, body }
    // The part for the other recipient is skipped, not an error.
    expect(await openSealedBody(s, opener(bob))).toEqual(m.body)
    expect(await openSealedBody(s, opener(carol))).toEqual(m.body)
  })

  it('the plaintext is JCS({from,to,recipient,message_id,conversation_id,body}), opened by libsodium', async () => {
    const m = message({ to: { agent: bob.agent } })
    const part = (await sealBody(m, [recipient(bob)])).body.parts[0] as { ciphertext: string }
    const pt = sodium.crypto_box_seal_open(
      base64urlDecode(part.ciphertext),
      ed25519PublicKeyToX25519(bob.publicKey),
      ed25519SeedToX25519SecretKey(bob.seed),
    )
    const { from, to, message_id, conversation_id, body } = m
    expect(new TextDecoder().decode(pt)).toBe(
      canonicalize({ from, to, recipient: bob.agent, message_id, conversation_id, body }),
    )
  })

  it('opens a body libsodium sealed the same way', async () => {
    const m = message({ to: { agent: bob.agent } })
    const { from, to, message_id, conversation_id, body } = m
    const pt = canonicalize({ from, to, recipient: bob.agent, message_id, conversation_id, body })
    const ct = sodium.crypto_box_seal(pt, ed25519PublicKeyToX25519(bob.publicKey))
    const part = { type: 'sealed' as const, recipient: bob.agent, key_id: bob.keyId }
    const s = { ...m, body: { parts: [{ ...part, ciphertext: base64urlEncode(ct) }] } }
    expect(await openSealedBody(s, opener(bob))).toEqual(body)
  })

  it('refuses a part lifted into another sender’s message, conversation, message id or `to`', async () => {
    const s = await sealed(message(), [bob])
    const lifts: Partial<SealableMessage>[] = [
      { from: { agent: mallory.agent } },
      { conversation_id: 'c-2' },
      { message_id: 'm-2' },
      { to: { agent: bob.agent } },
    ]
    for (const lift of lifts) {
      const key = Object.keys(lift)[0]
      await expectRefused(
        () => openSealedBody({ ...s, ...lift }, opener(bob)),
        new RegExp(`sealed ${key} does not match`),
        'body.parts[0].ciphertext',
      )
    }
  })

  it('refuses a part relabelled for another recipient (sealed recipient ≠ me)', async () => {
    // Carol's part, relabelled as Bob's, does not open with Bob's key.
    const s = await sealed(message(), [carol])
    const part = { ...(s.body.parts[0] as object), recipient: bob.agent, key_id: bob.keyId }
    await expectRefused(
      () => openSealedBody({ ...s, body: { parts: [part] } } as SealableMessage, opener(bob)),
      /does not open/,
    )
    // Sealed to Bob's key but naming Carol as recipient: opens, then refused.
    const m = message()
    const forBobAsCarol = await sealBody(m, [
      { ...recipient(bob), agent: carol.agent, keyId: `${carol.agent}#k1` },
    ])
    const carolPart = forBobAsCarol.body.parts[0] as object
    const relabelled = { ...carolPart, recipient: bob.agent }
    await expectRefused(
      () => openSealedBody({ ...m, body: { parts: [relabelled] } } as SealableMessage, opener(bob)),
      /sealed recipient is not/,
    )
  })

  it('refuses: no part for me, several parts for me, mixed parts, plaintext body', async () => {
    const s = await sealed(message(), [carol])
    await expectRefused(() => openSealedBody(s, opener(bob)), /no sealed part for/, 'body.parts')
    const two = {
      ...s,
      body: {
        parts: [
          ...(await sealed(message(), [bob])).body.parts,
          ...(await sealed(message(), [bob])).body.parts,
        ],
      },
    }
    await expectRefused(() => openSealedBody(two, opener(bob)), /several sealed parts/)
    const mixed = { ...s, body: { parts: [...s.body.parts, { type: 'text' as const, text: 'x' }] } }
    await expectRefused(
      () => openSealedBody(mixed, opener(carol)),
      /only hold sealed parts/,
      'body.parts[1]',
    )
    await expectRefused(() => openSealedBody(message(), opener(bob)), /only hold sealed parts/)
    await expectRefused(
      () => openSealedBody(message({ body: { parts: [] } }), opener(bob)),
      /no sealed parts/,
    )
  })

  it('refuses tampered, truncated, over-long and non-base64url ciphertexts', async () => {
    const s = await sealed(message(), [bob])
    const part = s.body.parts[0] as { ciphertext: string }
    const bytes = base64urlDecode(part.ciphertext)
    const variants: [Uint8Array | string, RegExp][] = [
      [Uint8Array.from(bytes, (b, i) => (i === 40 ? b ^ 1 : b)), /does not open/],
      [bytes.subarray(0, bytes.length - 1), /does not open/],
      [bytes.subarray(0, 47), /shorter than 48/],
      [new Uint8Array([...bytes, 0, 0, 0]), /does not open/],
      [`${part.ciphertext}=`, /./],
      ['!!!!', /./],
    ]
    for (const [ct, why] of variants) {
      const ciphertext = typeof ct === 'string' ? ct : base64urlEncode(ct)
      const t = { ...s, body: { parts: [{ ...(s.body.parts[0] as object), ciphertext }] } }
      await expectRefused(
        () => openSealedBody(t as SealableMessage, opener(bob)),
        why,
        'body.parts[0].ciphertext',
      )
    }
  })

  it('refuses to seal to no recipients, duplicates, a foreign keyId or a small-order key', async () => {
    const m = message()
    await expectRefused(() => sealBody(m, []), /at least one recipient/)
    await expectRefused(() => sealBody(m, [recipient(bob), recipient(bob)]), /duplicate recipient/)
    await expectRefused(() => sealBody(m, [{ ...recipient(bob), keyId: carol.keyId }]), /keyId/)
    await expectRefused(
      () => sealBody(m, [{ ...recipient(bob), publicKey: new Uint8Array(32) }]),
      /Ed25519 public key/,
    )
  })
})
