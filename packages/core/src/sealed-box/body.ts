/**
 * Sealing a message body per recipient and opening it (PROFILE §8). The sealed plaintext binds
 * the body to the signed outer fields (`from`, `to`, `message_id`, `conversation_id`) and to its
 * recipient, so a part lifted into another sender's message, conversation or recipient is
 * refused after opening.
 */

import { x25519 } from '@noble/curves/ed25519.js'
import { base64urlDecode, base64urlEncode } from '../base64url.js'
import { utf8Decode } from '../bytes.js'
import { AgentMsgError, invalidFormat } from '../errors.js'
import { canonicalize, canonicalizeToBytes } from '../jcs.js'
import { parseStrictJson } from '../strict-json.js'
import type { BodyPart, JsonValue, Message } from '../types.js'
import { ed25519PublicKeyToX25519, ed25519SeedToX25519SecretKey } from '../x25519.js'
import { cryptoBoxSeal, cryptoBoxSealOpen } from './primitives.js'

export { isSealedBody } from './detect.js'

/** The message fields sealing binds to (PROFILE §8); signatures are made after sealing. */
export type SealableMessage = Pick<
  Message,
  'from' | 'to' | 'message_id' | 'conversation_id' | 'body'
>

/** One recipient of a sealed body: its agent id and active Ed25519 key (PROFILE §8). */
export interface SealRecipient {
  agent: string
  /** The recipient's full Ed25519 key id, `<agent_id>#<fragment>`. */
  keyId: string
  /** The recipient's active Ed25519 public key (32 bytes). */
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

/**
 * Seal `message.body` for each recipient (PROFILE §8): per recipient, `crypto_box_seal` of
 * `JCS({from, to, recipient, message_id, conversation_id, body})` to the X25519 form of its
 * Ed25519 key. Put the returned `body` (and `encryption` as `security.encryption`) into the
 * message, then sign — signing must come after sealing, so signatures cover the sealed parts.
 */
export function sealBody(
  message: SealableMessage,
  recipients: readonly SealRecipient[],
): SealedBody {
  if (recipients.length === 0) throw invalidFormat('sealBody needs at least one recipient')
  const seen = new Set<string>()
  const parts: SealedPart[] = recipients.map((r, i) => {
    const field = `recipients[${i}]`
    if (typeof r.agent !== 'string' || r.agent === '') throw invalidFormat('no agent id', field)
    if (seen.has(r.agent)) throw invalidFormat(`duplicate recipient ${r.agent}`, field)
    seen.add(r.agent)
    if (typeof r.keyId !== 'string' || !r.keyId.startsWith(`${r.agent}#`)) {
      throw invalidFormat('keyId must be <agent_id>#<fragment> of this recipient', field)
    }
    const pk = ed25519PublicKeyToX25519(r.publicKey)
    const ciphertext = base64urlEncode(cryptoBoxSeal(plaintextFor(message, r.agent), pk))
    return { type: 'sealed', recipient: r.agent, key_id: r.keyId, ciphertext }
  })
  return {
    body: { parts },
    encryption: { scheme: 'sealed_box', recipients: recipients.map((r) => r.agent) },
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
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

/**
 * Open the part of a sealed body addressed to `me.agent` (PROFILE §8), after the message's
 * signatures were verified. Parts for other recipients are skipped. The opened plaintext must
 * repeat the message's `from`, `to`, `message_id` and `conversation_id` and name `me.agent` as
 * `recipient`, so a part lifted from another message, conversation or recipient is refused.
 */
export function openSealedBody(
  message: SealableMessage,
  me: SealedBoxOpener,
): { parts: BodyPart[]; [k: string]: JsonValue } {
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
  const sk = ed25519SeedToX25519SecretKey(me.ed25519Seed)
  let opened: Uint8Array
  try {
    opened = cryptoBoxSealOpen(ciphertext, x25519.getPublicKey(sk), sk)
  } catch (cause) {
    const reason = cause instanceof AgentMsgError ? cause.message : 'does not open'
    throw new AgentMsgError('invalid_format', `${field}: ${reason}`, { field, cause })
  } finally {
    sk.fill(0)
  }
  let sealed: Record<string, unknown>
  try {
    sealed = parseStrictJson(utf8Decode(opened))
  } catch (cause) {
    throw new AgentMsgError('invalid_format', `${field}: sealed plaintext is not a JSON object`, {
      field,
      cause,
    })
  }
  for (const key of ['from', 'to', 'message_id', 'conversation_id'] as const) {
    if (!sameJson(sealed[key] ?? null, message[key] ?? null)) {
      throw invalidFormat(`sealed ${key} does not match the signed message (lifted part)`, field)
    }
  }
  if (sealed.recipient !== me.agent) {
    throw invalidFormat(`sealed recipient is not ${me.agent} (lifted part)`, field)
  }
  const body = sealed.body
  if (!isObject(body) || !Array.isArray(body.parts)) {
    throw invalidFormat('sealed body has no parts array', field)
  }
  return body as { parts: BodyPart[]; [k: string]: JsonValue }
}
