/**
 * Sealing on send (PROFILE §8, SPEC §5.7) and the signed copies. A copy is sealed by default
 * unless its target is confidential (TLS to the peer itself, or relays trusted with bodies,
 * SPEC §5.7.2), as the transport says for each target. The sealed-box cryptography is imported
 * only when something is sealed.
 */
import {
  AgentMsgError,
  canonicalizeToBytes,
  type DeliveryTarget,
  didKeyFragment,
  isDidKey,
  type Message,
  PROFILE,
  publicKeyFromDidKey,
  type Signer,
  signMessage,
} from '@agentmsg/core'
import { base64urlDecode } from '@agentmsg/core/http'
import type { SealRecipient } from '@agentmsg/core/sealed-box'
import { documentOf, type PlannedTarget } from './route.js'
import type { SendContext } from './send.js'
import type { SendOptions } from './types.js'

/** How a send seals: the targets left to try, and whether the copy for each is sealed. */
export interface SealPlan {
  targets: PlannedTarget[]
  /** The recipient's key, when some copy is sealed. */
  recipient?: SealRecipient
  seals(target: DeliveryTarget): boolean
}

const NOTHING_SEALED = (targets: PlannedTarget[]): SealPlan => ({ targets, seals: () => false })

/**
 * The sealing of a send to `to` over `targets`. `seal: true` seals every copy and fails when
 * the key is unknown; `seal: false` seals none. By default, copies for targets that are not
 * confidential are sealed; when the key is unknown they are dropped from the route (plaintext
 * is sent only with `allowPlaintext`), and the send fails when nothing is left.
 *
 * @throws AgentMsgError `not_found` when a copy must be sealed and `to`'s key is unknown.
 */
export async function planSealing(
  c: SendContext,
  targets: PlannedTarget[],
  to: string,
  options: Pick<SendOptions, 'seal' | 'allowPlaintext'>,
): Promise<SealPlan> {
  if (options.seal === false) return NOTHING_SEALED(targets)
  const wants = (t: DeliveryTarget) => options.seal === true || t.confidential !== true
  if (!targets.some((t) => wants(t.target))) return NOTHING_SEALED(targets)
  const recipient = await recipientKey(c, to)
  if (recipient) return { targets, recipient, seals: wants }
  if (options.seal === true) throw cannotSeal(to, 'seal: false')
  if (options.allowPlaintext) return NOTHING_SEALED(targets)
  const unsealed = targets.filter((t) => !wants(t.target))
  if (unsealed.length === 0) throw cannotSeal(to, 'allowPlaintext: true')
  return NOTHING_SEALED(unsealed)
}

/**
 * The key to seal to (PROFILE §8): a did:key's own; a URL agent's active Ed25519 key from its
 * identity document (the newest when several are active); failing that, its one pinned key.
 */
export async function recipientKey(
  c: SendContext,
  agent: string,
): Promise<SealRecipient | undefined> {
  if (isDidKey(agent)) {
    const publicKey = publicKeyFromDidKey(agent)
    return { agent, keyId: `${agent}#${didKeyFragment(agent)}`, publicKey }
  }
  const doc = await documentOf(c, agent)
  if (doc) {
    const active = doc.keys
      .filter((k) => k.type === 'ed25519' && k.status === 'active')
      .sort((a, b) => Date.parse(b.created) - Date.parse(a.created))[0]
    if (!active) return undefined
    const publicKey = base64urlDecode(active.public_key, 'public_key')
    return { agent, keyId: `${agent}#${active.key_id}`, publicKey }
  }
  const pinned = (await (await c.keyStore()).keysOf(agent)).filter((k) => k.source === 'pinned')
  if (pinned.length !== 1) return undefined
  const { fragment, publicKey } = pinned[0]!
  return { agent, keyId: `${agent}#${fragment}`, publicKey: base64urlDecode(publicKey) }
}

/**
 * The copy for each target, made once per kind of copy: sealed when `sealing` says so for the
 * target (PROFILE §8, signed after sealing); a level-0 introduction is signed by the token
 * only, and its copy through relays also carries the sender's Ed25519 signature, which relays
 * require (PROFILE §9). Each copy is checked against PROFILE §6's size once, here.
 */
export function copies(
  unsigned: Message,
  signer: Signer,
  hmac: Signer | undefined,
  sealing: SealPlan,
): (target: DeliveryTarget) => Promise<Message> {
  let sealedBody: Promise<Message> | undefined
  const made = new Map<string, Promise<Message>>()
  return (target) => {
    const sealed = sealing.recipient !== undefined && sealing.seals(target)
    const both = target.route === 'relay' && hmac !== undefined
    const kind = `${sealed}/${both}`
    let copy = made.get(kind)
    if (!copy) {
      const base = sealed
        ? (sealedBody ??= sealMessage(unsigned, sealing.recipient!))
        : Promise.resolve(unsigned)
      copy = base.then(async (m) =>
        sized(await signMessage(m, both ? [signer, hmac] : (hmac ?? signer))),
      )
      made.set(kind, copy)
    }
    return copy
  }
}

/** Senders refuse to send a message over 1 MiB (PROFILE §6). */
export function sized(message: Message): Message {
  const bytes = canonicalizeToBytes(message).byteLength
  if (bytes > PROFILE.maxMessageBytes) {
    throw new AgentMsgError(
      'payload_too_large',
      `the message is ${bytes} bytes; at most ${PROFILE.maxMessageBytes} are sent (PROFILE §6)`,
    )
  }
  return message
}

/** `unsigned` with its body sealed for `recipient` and `security.encryption` set; sign it next. */
async function sealMessage(unsigned: Message, recipient: SealRecipient): Promise<Message> {
  const { sealBody } = await import('@agentmsg/core/sealed-box')
  const { body, encryption } = await sealBody(unsigned, [recipient])
  const security = { ...unsigned.security, signatures: unsigned.security?.signatures ?? [] }
  return { ...unsigned, body, security: { ...security, encryption } }
}

function cannotSeal(to: string, way: string): AgentMsgError {
  return new AgentMsgError(
    'not_found',
    `cannot seal for ${to}: its key is unknown (no identity document could be fetched and no ` +
      `key is pinned); pin its key, mark the relay trusted in relayTrust, or pass ${way}`,
  )
}
