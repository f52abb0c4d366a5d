/**
 * A token introduces one peer, and a URL agent's fetched document is final (PROFILE §5): the
 * key store and resolver chain on their own; the attacks end to end are in
 * packages/client/test/attack-introduction.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { createMessage } from '../src/create-message.js'
import { createIdentityDocument } from '../src/identity/create.js'
import type { IdentityFetcher } from '../src/identity-resolver.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import { createIntroductionToken, hmacSigner } from '../src/introduction-token.js'
import { KeyStore } from '../src/key-store.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import { signMessage } from '../src/sign.js'
import { memoryStorage } from '../src/storage/memory.js'
import { verifyMessage } from '../src/verify.js'
import { sampleMessage } from './fixtures.js'
import { alice, bob, failure } from './sign-verify-helpers.js'

const byToken = async (token: string, from: string, to = alice.id) =>
  signMessage(sampleMessage(from, to), await hmacSigner(token, from))

describe('a token introduces one peer (PROFILE §5)', () => {
  it('named: verifies its peer only; anyone else with it is a failing signature', async () => {
    const token = createIntroductionToken()
    const keyStore = new KeyStore()
    await keyStore.addIntroductionToken(token, bob.id)
    expect(await keyStore.introducedPeer(token)).toBe(bob.id)
    const resolver = createKeyResolver({ keyStore })
    expect((await verifyMessage(await byToken(token, bob.id), resolver)).level).toBe(0)
    const carol = 'https://carol.example'
    expect((await failure(verifyMessage(await byToken(token, carol), resolver))).code).toBe(
      'invalid_signature',
    )
    // Beside a signature that verifies on its own (did:key, level 3): still refused.
    const both = await signMessage(sampleMessage(alice.id, bob.id), [
      alice.signer,
      await hmacSigner(token, alice.id),
    ])
    expect((await failure(verifyMessage(both, resolver))).code).toBe('invalid_signature')
  })

  it('unnamed: bound to the first sender it verifies, never by a signature that fails', async () => {
    const token = createIntroductionToken()
    const storage = memoryStorage()
    const keyStore = new KeyStore({ storage })
    await keyStore.addIntroductionToken(token)
    const resolver = createKeyResolver({ keyStore })
    // A MAC that does not verify binds nothing.
    const bad = structuredClone(await byToken(token, 'https://mallory.example'))
    bad.security!.signatures[0]!.sig = (await byToken(token, bob.id)).security!.signatures[0]!.sig
    await failure(verifyMessage(bad, resolver))
    expect(await keyStore.introducedPeer(token)).toBeUndefined()

    expect((await verifyMessage(await byToken(token, bob.id), resolver)).level).toBe(0)
    expect(await keyStore.introducedPeer(token)).toBe(bob.id)
    expect(
      (await failure(verifyMessage(await byToken(token, 'https://mallory.example'), resolver)))
        .code,
    ).toBe('invalid_signature')
    // Adding the token again without a name keeps the binding; it survives a restart.
    await keyStore.addIntroductionToken(token)
    expect(await new KeyStore({ storage }).introducedPeer(token)).toBe(bob.id)
    // Forgetting the token forgets whom it introduced.
    await keyStore.removeIntroductionToken(token)
    await keyStore.addIntroductionToken(token)
    expect(await keyStore.introducedPeer(token)).toBeUndefined()
  })

  it('two first greetings at once: exactly one sender gets the token', async () => {
    const token = createIntroductionToken()
    const keyStore = new KeyStore()
    await keyStore.addIntroductionToken(token)
    const resolver = createKeyResolver({ keyStore })
    const senders = Array.from({ length: 8 }, (_, i) => `https://s${i}.example`)
    const results = await Promise.allSettled(
      senders.map(async (s) => verifyMessage(await byToken(token, s), resolver)),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    const winner = senders[results.findIndex((r) => r.status === 'fulfilled')]
    expect(await keyStore.introducedPeer(token)).toBe(winner)
  })
})

describe("a URL agent's fetched identity document is final (PROFILE §5)", () => {
  it('an introduced or pinned key it does not list is not found, and introduced ones are dropped', async () => {
    const carol = 'https://carol.example'
    const real = await generateKeyPair()
    const doc = createIdentityDocument({ agentId: carol, publicKey: real.publicKey, keyId: 'k1' })
    let published = false
    const fetchIdentity: IdentityFetcher = async () =>
      published ? { status: 'ok', document: doc } : { status: 'not_found', reason: '404' }
    const keyStore = new KeyStore()
    const evil = await generateKeyPair()
    await keyStore.addIntroducedKeys(
      createIdentityDocument({ agentId: carol, publicKey: evil.publicKey, keyId: 'k-evil' }),
    )
    // An introduced key under the document's own fragment but another public key.
    await keyStore.addIntroducedKeys(
      createIdentityDocument({ agentId: carol, publicKey: evil.publicKey, keyId: 'k1' }),
    )
    const signed = (keys: typeof evil, fragment: string) =>
      signMessage(
        createMessage({
          from: carol,
          to: alice.id,
          conversationId: 'c-1',
          sequence: 0,
          phase: 'request',
          text: 'hi',
        }),
        ed25519Signer(keys, `${carol}#${fragment}`),
      )
    // No document to fetch: the introduced key counts (level 1).
    let now = 0
    const resolver = createKeyResolver({ keyStore, fetchIdentity, now: () => now })
    const byEvil = await signed(evil, 'k-evil')
    expect((await verifyMessage(byEvil, resolver)).level).toBe(1)

    // The document can be fetched now (the "no document" answer expired).
    published = true
    now += 61_000
    expect((await failure(verifyMessage(byEvil, resolver))).code).toBe('unknown_sender')
    expect(await keyStore.keysOf(carol)).toEqual([])
    expect((await verifyMessage(await signed(real, 'k1'), resolver)).level).toBe(2)
    expect((await failure(verifyMessage(await signed(evil, 'k1'), resolver))).code).toBe(
      'invalid_signature',
    )

    // A later introduction or pin of an unlisted key: "try later" while the cached document
    // is fresh (PROFILE §4 refetch budget), then not found — never the stored key.
    await keyStore.addIntroducedKeys(
      createIdentityDocument({ agentId: carol, publicKey: evil.publicKey, keyId: 'k-evil' }),
    )
    await keyStore.pin(carol, 'k-pin', evil.publicKey)
    expect((await failure(verifyMessage(byEvil, resolver))).code).toBe('unavailable')
    now += 61_000
    expect((await failure(verifyMessage(byEvil, resolver))).code).toBe('unknown_sender')
    now += 61_000
    expect((await failure(verifyMessage(await signed(evil, 'k-pin'), resolver))).code).toBe(
      'unknown_sender',
    )
    expect((await keyStore.keysOf(carol)).map((k) => k.source)).toEqual(['pinned'])
  })
})
