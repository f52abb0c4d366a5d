import { fixtureAgent } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { AuthLevelTracker } from '../src/auth-level.js'
import { base64urlDecode } from '../src/base64url.js'
import { createMessage, createMessageId } from '../src/create-message.js'
import { createIdentityDocument } from '../src/identity/create.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import {
  createIntroductionToken,
  hmacSigner,
  introductionFragment,
} from '../src/introduction-token.js'
import { introducedIdentity, KeyStore } from '../src/key-store.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import { validateMessage } from '../src/message.js'
import { createErrorMessage, ErrorReplyGate } from '../src/receive/error-replies.js'
import { signMessage } from '../src/sign.js'
import type { Message } from '../src/types.js'
import { verifyMessage } from '../src/verify.js'

const bob = await fixtureAgent()

describe('introductions (PROFILE §5)', () => {
  it('a level-0 greeting carries an identity document whose keys are stored at level 1', async () => {
    const token = createIntroductionToken()
    expect(base64urlDecode(token)).toHaveLength(32)
    const carolKeys = await generateKeyPair()
    const carol = 'https://carol.example'
    const doc = createIdentityDocument({
      agentId: carol,
      publicKey: carolKeys.publicKey,
      keyId: 'k1',
    })
    const greeting = createMessage({
      from: carol,
      to: bob.id,
      conversationId: 'intro-1',
      sequence: 0,
      phase: 'greeting',
      authLevel: 0,
      parts: [{ type: 'data', data: { identity: doc as any } }],
    })
    const signed = await signMessage(greeting, await hmacSigner(token, carol))

    // Bob holds the token: the greeting verifies at level 0 …
    const keyStore = new KeyStore()
    expect(await keyStore.addIntroductionToken(token)).toBe(
      await introductionFragment(base64urlDecode(token)),
    )
    const resolver = createKeyResolver({ keyStore })
    const v0 = await verifyMessage(signed, resolver)
    expect(v0.level).toBe(0)
    // … and stores the introduced keys at level 1.
    const introduced = introducedIdentity(signed)
    expect(introduced?.agent_id).toBe(carol)
    await keyStore.addIntroducedKeys(introduced!)
    const next = await signMessage(
      createMessage({
        from: carol,
        to: bob.id,
        conversationId: 'intro-1',
        sequence: 1,
        phase: 'request',
        text: 'hi',
      }),
      ed25519Signer(carolKeys, `${carol}#k1`),
    )
    expect((await verifyMessage(next, resolver)).level).toBe(1)

    // Escalation through the tracker: 0 → 1, then a downgrade attempt is refused.
    const tracker = new AuthLevelTracker()
    await tracker.admit({
      from: carol,
      conversationId: 'intro-1',
      phase: 'greeting',
      level: 0,
      algs: ['hmac-sha256'],
    })
    const up = await tracker.admit({
      from: carol,
      conversationId: 'intro-1',
      phase: 'request',
      level: 1,
      algs: ['ed25519'],
    })
    expect(up.level).toBe(1)
    await expect(
      tracker.evaluate({
        from: carol,
        conversationId: 'intro-1',
        phase: 'request',
        level: 0,
        algs: ['hmac-sha256'],
      }),
    ).rejects.toMatchObject({ code: 'insufficient_auth_level', status: 401 })

    // Once the document can be fetched, introduced keys it does not list are dropped.
    const rotated = createIdentityDocument({
      agentId: carol,
      publicKey: (await generateKeyPair()).publicKey,
      keyId: 'k2',
    })
    expect(await keyStore.reconcileWithDocument(rotated)).toEqual(['k1'])
    await expect(verifyMessage(next, resolver)).rejects.toMatchObject({ code: 'unknown_sender' })
  })

  it('refuses an introduced document for another agent, or a did:key document with another key', async () => {
    const other = await fixtureAgent()
    const doc = createIdentityDocument({
      agentId: other.id,
      publicKey: other.keys.publicKey,
      endpoints: { inbox: 'https://x.example/inbox', capabilities: 'https://x.example/caps' },
    } as any)
    const msg = createMessage({
      from: bob.id,
      to: other.id,
      conversationId: 'c',
      sequence: 0,
      phase: 'greeting',
      parts: [{ type: 'data', data: { identity: doc as any } }],
    }) as unknown as Message
    expect(() => introducedIdentity(msg)).toThrow(/agent_id/)
    const plain = createMessage({
      from: bob.id,
      to: other.id,
      conversationId: 'c',
      sequence: 0,
      phase: 'greeting',
      text: 'x',
    })
    expect(introducedIdentity(plain as unknown as Message)).toBeUndefined()
  })
})

describe('error phase messages (PROFILE §7)', () => {
  const original = createMessage({
    from: bob.id,
    to: 'https://me.example',
    conversationId: 'c-9',
    sequence: 4,
    phase: 'haggle' as any,
    text: 'x',
  }) as unknown as Message

  it('builds a valid error message in the same conversation with the next sequence', async () => {
    const err = createErrorMessage({
      original,
      from: 'https://me.example',
      code: 'unknown_phase',
      message: 'phase haggle is not known',
    })
    expect(validateMessage(err).protocolError).toBeUndefined()
    expect(err).toMatchObject({
      phase: 'error',
      conversation_id: 'c-9',
      sequence: 5,
      content_type: 'application/json',
      to: { agent: bob.id },
    })
    expect((err.body as any).parts[0]).toEqual({
      type: 'data',
      data: {
        code: 'unknown_phase',
        message: 'phase haggle is not known',
        ref_message_id: original.message_id,
      },
    })
  })

  it('never answers an error with an error, and at most one a minute per peer', () => {
    const asError = { ...original, phase: 'error' } as Message
    expect(() =>
      createErrorMessage({
        original: asError,
        from: 'https://me.example',
        code: 'unknown_phase',
        message: 'x',
      }),
    ).toThrow()
    let now = 0
    const gate = new ErrorReplyGate({ now: () => now })
    expect(gate.allow(original, false)).toBe(false) // unverified sender
    expect(gate.allow(asError, true)).toBe(false)
    expect(gate.allow(original, true)).toBe(true)
    now += 59_999
    expect(gate.allow(original, true)).toBe(false)
    now += 1
    expect(gate.allow(original, true)).toBe(true)
  })
})

describe('message ids', () => {
  it('are ULIDs that sort by time and satisfy the id grammar', () => {
    const a = createMessageId(1_700_000_000_000)
    const b = createMessageId(1_700_000_000_001)
    expect(a).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/)
    expect(a < b).toBe(true)
    expect(new Set(Array.from({ length: 1000 }, () => createMessageId())).size).toBe(1000)
  })
})
