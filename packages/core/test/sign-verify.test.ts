/**
 * `signMessage` / `verifyMessage`: what a signature covers, every crypto provider, and the
 * changes that must fail (PROFILE §3).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { nobleCryptoProvider } from '../src/crypto/noble.js'
import { nodeCryptoProvider } from '../src/crypto/node.js'
import { createWebCryptoProvider } from '../src/crypto/web.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import { ed25519Signer, generateKeyPair } from '../src/keys.js'
import { signMessage } from '../src/sign.js'
import { formatTimestamp } from '../src/timestamps.js'
import type { Message } from '../src/types.js'
import { verifyMessage } from '../src/verify.js'
import { sampleMessage } from './fixtures.js'
import { alice, bob, clone, failure } from './sign-verify-helpers.js'

const resolver = createKeyResolver()

async function signed(extra?: (m: Record<string, any>) => void): Promise<Message> {
  const m = sampleMessage(alice.id, bob.id) as Record<string, any>
  extra?.(m)
  return signMessage(m as any, alice.signer)
}

/** Re-serialise with every object's keys in reverse order and with whitespace. */
function reorder(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reorder)
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .reverse()
        .map((k) => [k, reorder((v as any)[k])]),
    )
  }
  return v
}

describe('signMessage / verifyMessage', () => {
  it('signs with every present member covered and verifies a did:key sender at level 3', async () => {
    const msg = await signed()
    const sig = msg.security!.signatures[0]!
    expect(sig.signed_headers).toEqual([
      'version',
      'message_id',
      'date',
      'from',
      'to',
      'conversation_id',
      'sequence',
      'phase',
      'content_type',
      'ttl_seconds',
    ])
    expect(sig.signed_body).toBe(true)
    expect(sig.key_id).toBe(alice.signer.keyId)
    const r = await verifyMessage(msg, resolver)
    expect(r).toMatchObject({
      level: 3,
      source: 'did-key',
      alg: 'ed25519',
      keyId: alice.signer.keyId,
    })
  })

  it('verifies the same signature with every crypto provider', async () => {
    const msg = await signed()
    for (const provider of [nodeCryptoProvider, createWebCryptoProvider(), nobleCryptoProvider]) {
      expect((await verifyMessage(msg, resolver, { provider })).level).toBe(3)
      const bad = clone(msg)
      bad.sequence = 1
      expect((await failure(verifyMessage(bad, resolver, { provider }))).code).toBe(
        'invalid_signature',
      )
    }
  })

  it('survives re-serialisation with another key order and whitespace', async () => {
    const msg = await signed()
    const text = JSON.stringify(reorder(msg), null, 3)
    expect(text).not.toBe(JSON.stringify(msg))
    expect((await verifyMessage(JSON.parse(text), resolver)).level).toBe(3)
  })

  it('signs extension members and refuses a message that gains an uncovered member', async () => {
    const msg = await signed((m) => (m.x_priority = 'high'))
    expect(msg.security!.signatures[0]!.signed_headers).toContain('x_priority')
    await expect(verifyMessage(msg, resolver)).resolves.toBeTruthy()
    const grown = clone(msg) as any
    grown.auth_level = 3
    const e = await failure(verifyMessage(grown, resolver))
    expect(e.code).toBe('invalid_signature')
    expect(e.message).toMatch(/auth_level/)
  })

  it('ignores changes to trace, which is outside the signature', async () => {
    const msg = clone(await signed()) as any
    msg.trace = {
      received: [
        {
          by: 'relay:https://r.example',
          with: 'https/agentmsg-1',
          at: formatTimestamp(),
          from: alice.id,
        },
      ],
    }
    await expect(verifyMessage(msg, resolver)).resolves.toMatchObject({ level: 3 })
  })

  const tampers: Array<[string, (s: Record<string, any>, m: Record<string, any>) => void]> = [
    ['signed_headers reordered', (s) => s.signed_headers.reverse()],
    ['signed_headers missing a member', (s) => s.signed_headers.pop()],
    ['signed_headers naming body', (s) => s.signed_headers.push('body')],
    ['signed_headers naming an absent member', (s) => s.signed_headers.push('auth_level')],
    ['signed_headers with a duplicate', (s) => s.signed_headers.push('version')],
    ['alg changed to hmac-sha256', (s) => (s.alg = 'hmac-sha256')],
    ['key_id of another agent', (s) => (s.key_id = bob.signer.keyId)],
    ['key_id with a wrong did:key fragment', (s) => (s.key_id = `${alice.id}#k1`)],
    ['created changed', (s) => (s.created = formatTimestamp(Date.parse(s.created) - 1000))],
    ['created malformed', (s) => (s.created = '2026-11-21 22:48:01Z')],
    ['created 6 minutes ahead', (s) => (s.created = formatTimestamp(Date.now() + 6 * 60_000))],
    ['signed_body false', (s) => (s.signed_body = false)],
    ['sig padded', (s) => (s.sig += '==')],
    ['sig truncated', (s) => (s.sig = s.sig.slice(0, 80))],
    ['sig bit flipped', (s) => (s.sig = (s.sig[0] === 'A' ? 'B' : 'A') + s.sig.slice(1))],
    ['an extension member added to the signature', (s) => (s.note = 'x')],
  ]
  for (const [name, tamper] of tampers) {
    it(`refuses a signature with ${name} (invalid_signature)`, async () => {
      const msg = clone(await signed()) as any
      tamper(msg.security.signatures[0], msg)
      const e = await failure(verifyMessage(msg, resolver))
      expect(e.code).toBe('invalid_signature')
      expect(e.status).toBe(401)
    })
  }

  it('refuses unsigned messages and messages with only unknown algorithms', async () => {
    const msg = clone(await signed()) as any
    const sig = msg.security.signatures[0]
    delete msg.security
    expect((await failure(verifyMessage(msg, resolver))).code).toBe('invalid_signature')
    msg.security = { signatures: [{ ...sig, alg: 'ed448' }] }
    expect((await failure(verifyMessage(msg, resolver))).code).toBe('invalid_signature')
    // An unknown alg beside a good signature is set aside, even if malformed.
    msg.security = { signatures: [{ alg: 'pq-sig', junk: true }, sig] }
    expect((await verifyMessage(msg, resolver)).level).toBe(3)
  })

  it('refuses the whole message when any signature fails', async () => {
    const msg = await signed()
    const other = await signMessage(
      clone(msg) as any,
      ed25519Signer(await generateKeyPair(), alice.signer.keyId),
    )
    const e = await failure(verifyMessage(other, resolver))
    expect(e.code).toBe('invalid_signature')
  })

  it('property: any single-character change to a covered field or the body fails', async () => {
    const msg = await signed()
    const paths: Array<[string, (m: any) => { get(): string; set(v: string): void }]> = [
      ['message_id', (m) => ({ get: () => m.message_id, set: (v) => (m.message_id = v) })],
      [
        'conversation_id',
        (m) => ({ get: () => m.conversation_id, set: (v) => (m.conversation_id = v) }),
      ],
      ['content_type', (m) => ({ get: () => m.content_type, set: (v) => (m.content_type = v) })],
      ['date', (m) => ({ get: () => m.date, set: (v) => (m.date = v) })],
      ['from.agent', (m) => ({ get: () => m.from.agent, set: (v) => (m.from.agent = v) })],
      ['to.agent', (m) => ({ get: () => m.to.agent, set: (v) => (m.to.agent = v) })],
      ['phase', (m) => ({ get: () => m.phase, set: (v) => (m.phase = v) })],
      [
        'body text',
        (m) => ({ get: () => m.body.parts[0].text, set: (v) => (m.body.parts[0].text = v) }),
      ],
    ]
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: paths.length - 1 }),
        fc.nat(),
        fc.integer({ min: 0x20, max: 0x7e }),
        async (which, pos, code) => {
          const m = clone(msg)
          const field = paths[which]![1](m)
          const value = field.get()
          const i = pos % value.length
          const ch = String.fromCharCode(code)
          fc.pre(value[i] !== ch)
          field.set(value.slice(0, i) + ch + value.slice(i + 1))
          await expect(verifyMessage(m, resolver)).rejects.toMatchObject({
            code: expect.stringMatching(/^(invalid_signature|invalid_format|unknown_sender)$/),
          })
        },
      ),
      { numRuns: 200 },
    )
  })

  it('property: changing any covered number fails', async () => {
    const msg = await signed()
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('sequence', 'ttl_seconds'),
        fc.integer({ min: 1, max: 1000 }),
        async (f, d) => {
          const m = clone(msg) as any
          m[f] += d
          await expect(verifyMessage(m, resolver)).rejects.toMatchObject({
            code: 'invalid_signature',
          })
        },
      ),
      { numRuns: 50 },
    )
  })
})
