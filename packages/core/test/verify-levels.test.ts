/** Key resolution and authentication levels of verified messages (PROFILE §4, §5, §11). */
import { describe, expect, it } from 'vitest'
import { createIdentityDocument } from '../src/identity/create.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import { createIntroductionToken, hmacSigner } from '../src/introduction-token.js'
import { KeyStore } from '../src/key-store.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import { signMessage } from '../src/sign.js'
import { verifyMessage } from '../src/verify.js'
import { sampleMessage } from './fixtures.js'
import { alice, bob, clone, failure } from './sign-verify-helpers.js'

describe('key resolution and levels (PROFILE §4, §5, §11)', () => {
  it('level 1: an Ed25519 key learned in an introduction', async () => {
    const keyStore = new KeyStore()
    const keys = await generateKeyPair()
    const carol = 'https://carol.example'
    const doc = createIdentityDocument({ agentId: carol, publicKey: keys.publicKey, keyId: 'k1' })
    expect(await keyStore.addIntroducedKeys(doc)).toEqual(['k1'])
    const msg = await signMessage(
      sampleMessage(carol, alice.id),
      ed25519Signer(keys, `${carol}#k1`),
    )
    const r = await verifyMessage(msg, createKeyResolver({ keyStore }))
    expect(r).toMatchObject({ level: 1, source: 'introduction' })
    // A later introduction never replaces a stored key.
    const other = await generateKeyPair()
    expect(
      await keyStore.addIntroducedKeys(
        createIdentityDocument({ agentId: carol, publicKey: other.publicKey, keyId: 'k1' }),
      ),
    ).toEqual([])
    expect((await verifyMessage(msg, createKeyResolver({ keyStore }))).level).toBe(1)
  })

  it('level 2: a key pinned after out-of-band confirmation', async () => {
    const keyStore = new KeyStore()
    const keys = await generateKeyPair()
    await keyStore.pin('dave', 'k1', keys.publicKey)
    const msg = await signMessage(sampleMessage('dave', alice.id), ed25519Signer(keys, 'dave#k1'))
    expect(await verifyMessage(msg, createKeyResolver({ keyStore }))).toMatchObject({
      level: 2,
      source: 'pinned',
    })
  })

  it('unknown_sender: a simple name without a pinned key', async () => {
    const keys = await generateKeyPair()
    const msg = await signMessage(sampleMessage('erin', alice.id), ed25519Signer(keys, 'erin#k1'))
    const e = await failure(verifyMessage(msg, createKeyResolver({ keyStore: new KeyStore() })))
    expect(e.code).toBe('unknown_sender')
    expect(e.status).toBe(401)
  })

  it('level 0: an introduction token; set aside when the verifier does not hold it', async () => {
    const token = createIntroductionToken()
    const keyStore = new KeyStore()
    const hmacOnly = await signMessage(
      sampleMessage(alice.id, bob.id),
      await hmacSigner(token, alice.id),
    )
    expect(hmacOnly.security!.signatures[0]!.key_id).toMatch(/#intro-[A-Za-z0-9_-]{16}$/)
    // Not held: the only signature is set aside → unknown_sender.
    expect((await failure(verifyMessage(hmacOnly, createKeyResolver({ keyStore })))).code).toBe(
      'unknown_sender',
    )
    await keyStore.addIntroductionToken(token)
    expect(await verifyMessage(hmacOnly, createKeyResolver({ keyStore }))).toMatchObject({
      level: 0,
      source: 'shared-secret',
      alg: 'hmac-sha256',
    })
    // Ed25519 beside HMAC: a relay (no secret) still verifies the Ed25519 one.
    const both = await signMessage(sampleMessage(alice.id, bob.id), [
      alice.signer,
      await hmacSigner(token, alice.id),
    ])
    const relaySide = await verifyMessage(both, createKeyResolver())
    expect(relaySide.signatures.map((s) => s.alg)).toEqual(['ed25519'])
    const full = await verifyMessage(both, createKeyResolver({ keyStore }))
    expect(full.signatures.map((s) => s.level)).toEqual([3, 0])
    // A wrong token: the MAC fails → the message is refused.
    const forged = await signMessage(sampleMessage(alice.id, bob.id), [
      alice.signer,
      await hmacSigner(createIntroductionToken(), alice.id),
    ])
    const ks2 = new KeyStore()
    const sigFrag = forged.security!.signatures[1]!.key_id.split('#')[1]!
    // Store a different secret under the forged fragment's name is impossible (fragment = hash of
    // secret), so tamper the MAC instead.
    await ks2.addIntroductionToken(token)
    const tampered = clone(both) as any
    tampered.security.signatures[1].sig = forged.security!.signatures[1]!.sig
    expect(sigFrag).toMatch(/^intro-/)
    expect(
      (await failure(verifyMessage(tampered, createKeyResolver({ keyStore: ks2 })))).code,
    ).toBe('invalid_signature')
  })
})
