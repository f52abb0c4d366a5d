import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type KeyPair,
  type Signer,
  type UnsignedMessage,
} from '../src/index.js'

/** A did:key agent with its signer. */
export interface TestAgent {
  id: string
  keys: KeyPair
  signer: Signer
}

export async function didKeyAgent(): Promise<TestAgent> {
  const keys = await generateKeyPair()
  const id = didKeyFromPublicKey(keys.publicKey)
  return { id, keys, signer: ed25519Signer(keys) }
}

/** A message of about `size` bytes of text from `from` to `to`. */
export function sampleMessage(from: string, to: string, size = 200, date = Date.now()): UnsignedMessage {
  return createMessage({
    from,
    to,
    conversationId: 'c-7f3a',
    sequence: 0,
    phase: 'request',
    date,
    ttlSeconds: 86_400,
    parts: [
      { type: 'text', text: 'héllo wörld ✓ '.repeat(Math.max(1, Math.floor(size / 16))) },
      { type: 'data', data: { n: 1.5, list: [1, 2, 3], nested: { ok: true, none: null } } },
    ],
  })
}
