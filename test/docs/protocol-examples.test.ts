/**
 * The examples of docs/protocol.md are real: made from the seeds the page names, they verify
 * as the SDK verifies what it receives. Each is the fenced block after an
 * `<!-- example: name -->` line, so an edit that breaks one (or drops its marker) fails here.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import {
  buildSigningInput,
  didKeyFromPublicKey,
  getDefaultCryptoProvider,
  keyPairFromSeed,
  type Message,
} from '@agentmsg/core'
import { base64Decode } from '@agentmsg/core/http'
import { validateIdentityDocument } from '@agentmsg/core/identity'
import { didKeyResolver, verifyMessage } from '@agentmsg/core/receive'
import { NonceMemory, verifyRequest, verifyWsAuth } from '@agentmsg/core/server'
import { describe, expect, it } from 'vitest'
import { repoRoot } from './readme-blocks.js'

const page = readFileSync(path.join(repoRoot, 'docs/protocol.md'), 'utf8')

/** The fenced block after `<!-- example: name -->`. */
function example(name: string): string {
  const m = new RegExp(`<!-- example: ${name} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(
    page,
  )
  if (!m) throw new Error(`docs/protocol.md has no example "${name}"`)
  return m[1]!
}

const seed = (byte: number) => new Uint8Array(32).fill(byte)
const message = JSON.parse(example('message')) as Message
const now = Date.parse(message.date)

describe('docs/protocol.md examples', () => {
  it('the message is signed by the did:key of seed 01…01 and verifies at level 3', async () => {
    const alice = await keyPairFromSeed(seed(1))
    expect(message.from.agent).toBe(didKeyFromPublicKey(alice.publicKey))
    const verdict = await verifyMessage(message, didKeyResolver(), { now })
    expect({ level: verdict.level, source: verdict.source }).toEqual({
      level: 3,
      source: 'did-key',
    })
    // One changed byte of the body and it no longer does.
    const changed = structuredClone(message)
    changed.body.parts = [{ type: 'text', text: 'hellO' }]
    await expect(verifyMessage(changed, didKeyResolver(), { now })).rejects.toMatchObject({
      code: 'invalid_signature',
    })
  })

  it("the signing input is the message's, line for line", () => {
    const { sig: _sig, ...params } = message.security!.signatures[0]!
    const input = buildSigningInput(message, params.signed_headers, true, params)
    expect(new TextDecoder().decode(input)).toBe(example('signing-input'))
  })

  it('the identity document is valid and lists the keys of seeds 02…02 and 03…03', async () => {
    const doc = validateIdentityDocument(JSON.parse(example('identity-document')), {
      expectedAgentId: 'https://bob.example',
    })
    const keys = await Promise.all(
      [2, 3].map(async (b) => (await keyPairFromSeed(seed(b))).publicKey),
    )
    const encoded = keys.map((k) => Buffer.from(k).toString('base64url'))
    expect(doc.keys.map((k) => [k.public_key, k.status])).toEqual([
      [encoded[0], 'retired'],
      [encoded[1], 'active'],
    ])
  })

  it('the RFC 9421 request verifies at a relay, over the signature base shown', async () => {
    const [requestLine, ...headerLines] = example('rfc9421').split('\n')
    const [method, targetUri] = requestLine!.split(' ') as [string, string]
    const headers = new Headers(headerLines.map((l) => l.split(/: (.*)/s, 2) as [string, string]))
    const created = Number(/created=(\d+)/.exec(headers.get('signature-input')!)![1]) * 1000
    const verified = await verifyRequest({
      method,
      targetUri,
      headers,
      resolver: didKeyResolver(),
      nonces: new NonceMemory({ now: () => created }),
      now: created,
    })
    expect(verified.agent).toBe(message.from.agent)
    const sig = base64Decode(/^sig1=:(.*):$/.exec(headers.get('signature')!)![1]!)
    const alice = await keyPairFromSeed(seed(1))
    const base = new TextEncoder().encode(example('rfc9421-base'))
    expect(await getDefaultCryptoProvider().ed25519Verify(alice.publicKey, base, sig)).toBe(true)
  })

  it('the WebSocket auth frame answers the challenge shown', async () => {
    const [challenge, auth] = example('websocket')
      .split('\n')
      .slice(0, 2)
      .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as Record<string, string>)
    const verified = await verifyWsAuth({
      frame: JSON.stringify(auth),
      relayBaseUrl: 'https://relay.example',
      nonce: challenge!.nonce!,
      resolver: didKeyResolver(),
    })
    expect(verified).toMatchObject({ agent: message.from.agent, after: '41', level: 3 })
  })
})
