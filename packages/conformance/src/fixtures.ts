/**
 * The fixtures every package's tests share: a did:key agent that can sign, and a signed message
 * from it. Isomorphic (core only), so browser entries use them too.
 */
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

/** A did:key agent with its key pair and signer. */
export interface FixtureAgent {
  /** The agent's did:key id. */
  id: string
  keys: KeyPair
  signer: Signer
}

/**
 * A did:key agent (PROFILE §2). With a 32-byte `seed` (the Ed25519 secret key) it is the same
 * agent every run; without one it is a fresh random key.
 *
 * @example
 * const alice = await fixtureAgent()
 * const fixed = await fixtureAgent(new Uint8Array(32).fill(7))
 */
export async function fixtureAgent(seed?: Uint8Array): Promise<FixtureAgent> {
  const keys = seed === undefined ? await generateKeyPair() : await keyPairFromSeed(seed)
  return { id: didKeyFromPublicKey(keys.publicKey), keys, signer: ed25519Signer(keys) }
}

/** Options for how {@link signedMessage} signs. */
export interface FixtureSignOptions {
  /** The signature's `created` time (ms or a timestamp string). @default now */
  created?: number | string
  /** Sign with these instead of the sender's own signer (e.g. a wrong key, or two signers). */
  signer?: Signer | Signer[]
}

let conversation = 0

/**
 * A `request` message from `sender` to an agent id or `{ topic }`, text `hello`, signed by the
 * sender (PROFILE §3). Each call starts a new conversation (`c-1`, `c-2`, …) at sequence 0;
 * `overrides` change any of {@link CreateMessageOptions}.
 *
 * @example
 * const m = await signedMessage(alice, bob.id, { text: 'hi', ttlSeconds: 60 })
 */
export async function signedMessage(
  sender: { id: string; signer: Signer },
  to: string | { topic: string },
  overrides: Partial<CreateMessageOptions> = {},
  sign: FixtureSignOptions = {},
): Promise<Message> {
  return signAs(sender, unsignedMessage(sender, to, overrides), sign)
}

function unsignedMessage(
  sender: { id: string },
  to: string | { topic: string },
  overrides: Partial<CreateMessageOptions>,
): Message {
  return createMessage({
    from: sender.id,
    to,
    conversationId: `c-${++conversation}`,
    sequence: 0,
    phase: 'request',
    text: 'hello',
    ...overrides,
  })
}

function signAs(
  sender: { signer: Signer },
  message: Message,
  sign: FixtureSignOptions,
): Promise<Message> {
  return signMessage(
    message,
    sign.signer ?? sender.signer,
    sign.created !== undefined ? { created: sign.created } : {},
  )
}

/**
 * Like {@link signedMessage}, but the body is sealed for `recipients` (their did:key keys) and
 * then signed (PROFILE §8), with `security.encryption` naming them.
 *
 * @example
 * const m = await sealedMessage(alice, bob.id, [bob], { text: 'for bob only' })
 */
export async function sealedMessage(
  sender: { id: string; signer: Signer },
  to: string | { topic: string },
  recipients: readonly FixtureAgent[],
  overrides: Partial<CreateMessageOptions> = {},
  sign: FixtureSignOptions = {},
): Promise<Message> {
  const message = unsignedMessage(sender, to, overrides)
  const { body, encryption } = sealBody(
    message,
    recipients.map((r) => ({ agent: r.id, keyId: r.signer.keyId, publicKey: r.keys.publicKey })),
  )
  return signAs(sender, { ...message, body, security: { signatures: [], encryption } }, sign)
}
