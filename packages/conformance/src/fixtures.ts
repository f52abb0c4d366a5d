/** Fixtures for tests: a did:key agent that signs, and signed or sealed messages from it. */
import {
  type CreateMessageOptions,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type KeyPair,
  keyPairFromSeed,
  type Message,
  type Signer,
  signMessage,
} from '@agentmsg/core'
import { sealBody } from '@agentmsg/core/sealed-box'

/** A did:key agent (its id) with its key pair and signer. */
export interface FixtureAgent {
  /** Its did:key. */
  id: string
  /** Its Ed25519 key pair. */
  keys: KeyPair
  /** Signs as it, with its did:key key id. */
  signer: Signer
}

/**
 * A did:key agent (PROFILE §2), the same every run for a 32-byte `seed` (Ed25519 secret key).
 * @example const fixed = await fixtureAgent(new Uint8Array(32).fill(7))
 */
export async function fixtureAgent(seed?: Uint8Array): Promise<FixtureAgent> {
  const keys = seed === undefined ? await generateKeyPair() : await keyPairFromSeed(seed)
  return { id: didKeyFromPublicKey(keys.publicKey), keys, signer: ed25519Signer(keys) }
}

/** How the fixtures sign: `created` (ms or a timestamp; default now), other `signer`(s). */
type SignOptions = { created?: number | string; signer?: Signer | Signer[] }
type Sender = { id: string; signer: Signer }

let conversation = 0

/**
 * A signed `request` (PROFILE §3), text `hello`, opening a conversation (`c-1`, `c-2`, …);
 * `overrides` change any `CreateMessageOptions`, `sign` its `created` time or signers.
 * @example const m = await signedMessage(alice, bob.id, { text: 'hi', ttlSeconds: 60 })
 */
export async function signedMessage(
  sender: Sender,
  to: string | { topic: string },
  overrides: Partial<CreateMessageOptions> = {},
  sign: SignOptions = {},
): Promise<Message> {
  return signAs(sender, unsigned(sender, to, overrides), sign)
}

/**
 * Like {@link signedMessage}, the body sealed for `recipients` before signing (PROFILE §8).
 * @example const m = await sealedMessage(alice, bob.id, [bob], { text: 'for bob only' })
 */
export async function sealedMessage(
  sender: Sender,
  to: string | { topic: string },
  recipients: readonly FixtureAgent[],
  overrides: Partial<CreateMessageOptions> = {},
  sign: SignOptions = {},
): Promise<Message> {
  const message = unsigned(sender, to, overrides)
  const { body, encryption } = await sealBody(
    message,
    recipients.map((r) => ({ agent: r.id, keyId: r.signer.keyId, publicKey: r.keys.publicKey })),
  )
  return signAs(sender, { ...message, body, security: { signatures: [], encryption } }, sign)
}

function unsigned(
  sender: Sender,
  to: string | { topic: string },
  o: Partial<CreateMessageOptions>,
) {
  const base = { from: sender.id, to, conversationId: `c-${++conversation}`, sequence: 0 }
  return createMessage({ ...base, phase: 'request', text: 'hello', ...o })
}

function signAs(sender: Sender, message: Message, sign: SignOptions): Promise<Message> {
  const options = sign.created !== undefined ? { created: sign.created } : {}
  return signMessage(message, sign.signer ?? sender.signer, options)
}
