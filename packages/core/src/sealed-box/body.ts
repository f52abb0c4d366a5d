// Sealed bodies (PROFILE §8): the plaintext binds the body to the signed `from`, `to`,
// `message_id`, `conversation_id` and the recipient, so a lifted part is refused.
import { x25519Backend } from '#x25519'
import { base64urlDecode, base64urlEncode } from '../base64url.js'
import { utf8Decode } from '../bytes.js'
import { AgentMsgError, invalidFormat } from '../errors.js'
import { canonicalize, canonicalizeToBytes } from '../jcs.js'
import { seedCache } from '../lru.js'
import { validateBody } from '../message.js'
import type { ReceiveOpener } from '../receive/types.js'
import { parseStrictJson } from '../strict-json.js'
import { type BodyPart, isObject, type JsonValue, type Message } from '../types.js'
import { ed25519PublicKeyToX25519, ed25519SeedToX25519SecretKey } from '../x25519.js'
import { openWith, sealWith } from './primitives.js'

/** The message fields sealing binds to; signatures are made after sealing. */
export type SealableMessage = Pick<
  Message,
  'from' | 'to' | 'message_id' | 'conversation_id' | 'body'
>

/** One recipient of a sealed body: its agent id and active Ed25519 key (PROFILE §8). */
export interface SealRecipient {
  /** Its agent id. */
  agent: string
  /** Its full key id. */
  keyId: string
  /** The Ed25519 public key, converted to X25519 to seal. */
  publicKey: Uint8Array
}

/** The sealed body and the advisory `security.encryption` object (PROFILE §8). */
export interface SealedBody {
  body: { parts: BodyPart[] }
  encryption: { scheme: 'sealed_box'; recipients: string[] }
}

/** Who opens: this agent's id and the Ed25519 seed of its active key. */
export interface SealedBoxOpener {
  agent: string
  ed25519Seed: Uint8Array
}

type SealedPart = Extract<BodyPart, { type: 'sealed' }>

function plaintextFor(message: SealableMessage, recipient: string): Uint8Array {
  const { from, to, message_id, conversation_id, body } = message
  return canonicalizeToBytes({ from, to, recipient, message_id, conversation_id, body })
}

/** Seal `message.body` for each recipient (PROFILE §8); sign the message after. */
export async function sealBody(
  message: SealableMessage,
  recipients: readonly SealRecipient[],
): Promise<SealedBody> {
  if (recipients.length === 0) throw invalidFormat('sealBody needs at least one recipient')
  const seen = new Set<string>()
  const x = await x25519Backend()
  const parts: SealedPart[] = await Promise.all(
    recipients.map(async (r, i) => {
      const field = `recipients[${i}]`
      if (typeof r.agent !== 'string' || r.agent === '') throw invalidFormat('no agent id', field)
      if (seen.has(r.agent)) throw invalidFormat(`duplicate recipient ${r.agent}`, field)
      seen.add(r.agent)
      if (typeof r.keyId !== 'string' || !r.keyId.startsWith(`${r.agent}#`)) {
        throw invalidFormat('keyId must be <agent_id>#<fragment> of this recipient', field)
      }
      const pk = ed25519PublicKeyToX25519(r.publicKey)
      const ciphertext = base64urlEncode(await sealWith(x, plaintextFor(message, r.agent), pk))
      return { type: 'sealed', recipient: r.agent, key_id: r.keyId, ciphertext }
    }),
  )
  return {
    body: { parts },
    encryption: { scheme: 'sealed_box', recipients: recipients.map((r) => r.agent) },
  }
}

function checkPart(part: unknown, i: number): SealedPart {
  const field = `body.parts[${i}]`
  if (!isObject(part) || part.type !== 'sealed') {
    throw invalidFormat('a sealed body may only hold sealed parts', field)
  }
  for (const key of ['recipient', 'key_id', 'ciphertext'] as const) {
    if (typeof part[key] !== 'string') throw invalidFormat(`${key} must be a string`, field)
  }
  return part as SealedPart
}

const sameJson = (a: unknown, b: unknown): boolean => canonicalize(a) === canonicalize(b)

// This agent's X25519 key pair, derived once per seed (bounded, as every per-identity cache);
// the public key is X25519(sk, 9), 9 being the base point's u-coordinate (RFC 7748 §4.1).
const BASE_POINT = Uint8Array.of(9, ...new Uint8Array(31))
const ownKeys = seedCache((seed) => {
  const secretKey = ed25519SeedToX25519SecretKey(seed)
  return { secretKey, publicKey: x25519Backend().then((x) => x.shared(secretKey, BASE_POINT)) }
})

/** Open the part addressed to `me.agent` (PROFILE §8), after the signatures were verified. */
export async function openSealedBody(
  message: SealableMessage,
  me: SealedBoxOpener,
): Promise<{ parts: BodyPart[]; [k: string]: JsonValue }> {
  const parts = message.body?.parts
  if (!Array.isArray(parts) || parts.length === 0) {
    throw invalidFormat('body has no sealed parts', 'body.parts')
  }
  const mine = parts.map(checkPart).flatMap((p, i) => (p.recipient === me.agent ? [i] : []))
  if (mine.length === 0) throw invalidFormat(`no sealed part for ${me.agent}`, 'body.parts')
  if (mine.length > 1) throw invalidFormat(`several sealed parts for ${me.agent}`, 'body.parts')
  const index = mine[0] as number
  const field = `body.parts[${index}].ciphertext`
  const part = parts[index] as SealedPart
  const ciphertext = base64urlDecode(part.ciphertext, field)
  const own = ownKeys(me.ed25519Seed)
  let opened: Uint8Array
  try {
    opened = await openWith(await x25519Backend(), ciphertext, await own.publicKey, own.secretKey)
  } catch (cause) {
    const reason = cause instanceof AgentMsgError ? cause.message : 'does not open'
    throw new AgentMsgError('invalid_format', `${field}: ${reason}`, { field, cause })
  }
  let sealed: Record<string, unknown>
  try {
    sealed = parseStrictJson(utf8Decode(opened))
  } catch (cause) {
    const text = `${field}: sealed plaintext is not a JSON object`
    throw new AgentMsgError('invalid_format', text, { field, cause })
  }
  for (const key of ['from', 'to', 'message_id', 'conversation_id'] as const) {
    if (!sameJson(sealed[key] ?? null, message[key] ?? null)) {
      throw invalidFormat(`sealed ${key} does not match the signed message (lifted part)`, field)
    }
  }
  if (sealed.recipient !== me.agent) {
    throw invalidFormat(`sealed recipient is not ${me.agent} (lifted part)`, field)
  }
  // PROFILE §8: the opened body is validated as §2 validates any body (the plaintext's parse
  // kept §1's depth: body sits at the same depth in the plaintext as in the message).
  validateBody(sealed.body, true)
  return sealed.body as { parts: BodyPart[]; [k: string]: JsonValue }
}

/** `message` with its body opened for `opener.agent`, with the seed of the key its part names. */
export async function openForReceiver(message: Message, opener: ReceiveOpener): Promise<Message> {
  const parts: unknown[] = message.body.parts
  const mine = parts.find((p) => isObject(p) && p.recipient === opener.agent) as
    | BodyPart
    | undefined
  if (!mine) throw invalidFormat(`no sealed part for ${opener.agent}`, 'body.parts')
  const keyId = typeof mine.key_id === 'string' ? mine.key_id : ''
  const seed = opener.ed25519Seed(keyId)
  if (!seed) throw invalidFormat(`${keyId} is not a key of ${opener.agent}`, 'body.parts')
  const body = await openSealedBody(message, { agent: opener.agent, ed25519Seed: seed })
  return { ...message, body }
}
