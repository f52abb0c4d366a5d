/**
 * Sending: a message is numbered in its conversation, signed (twice for a level-0
 * introduction: relays need an Ed25519 signature, PROFILE §9) and handed to the router.
 */
import {
  type BodyPart,
  createMessage,
  createMessageId,
  type DeliveryTarget,
  hmacSigner,
  type JsonValue,
  type Message,
  parseAgentId,
  type Signer,
  type Storage,
  signMessage,
  type UnsignedMessage,
} from '@agentmsg/core'
import type { Conversations } from './conversations.js'
import { type OwnKeys, relayList } from './identity.js'
import type { PeerRelays } from './peers.js'
import type { Delivered, Router } from './route.js'
import { type Sealing, type SealPlan, sealMessage } from './seal.js'
import type { Content, SendOptions, SendResult } from './types.js'

/** What sending needs from the agent. */
export interface SendContext {
  keys: OwnKeys
  relays: readonly string[]
  storage: Storage
  now: () => number
  router: Router
  sealing: Sealing
  peers: PeerRelays
  conversations: Conversations
  /** Store an introduction token; returns its fragment. */
  addToken(token: string): Promise<unknown>
  /** The agent a held token introduces (named, or bound by its first greeting), if any. */
  tokenPeer(token: string): Promise<string | undefined>
}

export async function sendMessage(
  c: SendContext,
  to: string,
  content: Content,
  options: SendOptions = {},
): Promise<SendResult> {
  const recipient = parseAgentId(to, 'to').id
  const given = relayList(options.relays ?? [], 'options.relays')
  if (given.length) await c.peers.remember(recipient, given)
  const conversationId = options.conversationId ?? createMessageId(c.now())
  // Numbered and persisted before anything goes out.
  const { sequence, isNew } = await c.conversations.take(conversationId, recipient)
  const parts: BodyPart[] =
    typeof content === 'string' ? [{ type: 'text', text: content }] : [...content.parts]
  const intro = options.authLevel === 0
  const phase = options.phase ?? (isNew ? 'greeting' : 'request')
  const document = c.keys.document
  // PROFILE §5: a level-0 greeting carries the identity document, so the peer learns the key.
  if (intro && document && phase === 'greeting') {
    parts.push({ type: 'data', data: { identity: document as unknown as JsonValue } })
  }
  const unsigned = createMessage({
    from: c.keys.id,
    to: recipient,
    conversationId,
    sequence,
    phase,
    parts,
    contentType:
      typeof content === 'string' ? 'text/plain' : (content.contentType ?? 'application/json'),
    date: c.now(),
    ...(c.relays.length ? { relays: [...c.relays] } : {}),
    ...(options.authLevel !== undefined ? { authLevel: options.authLevel } : {}),
    ...(options.ttlSeconds !== undefined ? { ttlSeconds: options.ttlSeconds } : {}),
  })
  const hmac = intro
    ? await hmacSigner(await token(c, options.introduction, recipient), c.keys.id)
    : undefined
  const planned = await c.router.plan({
    to: recipient,
    route: options.route ?? 'auto',
    relays: given,
  })
  const sealing = await c.sealing.plan(planned, recipient, options)
  const delivered = await c.router.deliver(
    sealing.targets,
    copies(unsigned, c.keys.signer, hmac, sealing),
    options.signal,
  )
  return {
    ...sendResult(delivered, unsigned.message_id, conversationId),
    sealed: sealing.seals(delivered.receipt.target),
  }
}

/**
 * The copy for each target, made once per kind of copy: sealed when `sealing` says so for the
 * target (PROFILE §8, signed after sealing); a level-0 introduction is signed by the token only,
 * and its relay copy also carries the sender's Ed25519 signature, which relays require (PROFILE §9).
 */
export function copies(
  unsigned: UnsignedMessage,
  signer: Signer,
  hmac?: Signer,
  sealing?: SealPlan,
): (target: DeliveryTarget) => Promise<Message> {
  let sealedBody: Promise<UnsignedMessage> | undefined
  const made = new Map<string, Promise<Message>>()
  return (target) => {
    const sealed = sealing?.recipient !== undefined && sealing.seals(target)
    const both = target.kind === 'relay' && hmac !== undefined
    const kind = `${sealed}/${both}`
    let copy = made.get(kind)
    if (!copy) {
      const base = sealed
        ? (sealedBody ??= sealMessage(unsigned, sealing!.recipient!))
        : Promise.resolve(unsigned)
      copy = base.then((m) => signMessage(m, both ? [signer, hmac] : (hmac ?? signer)))
      made.set(kind, copy)
    }
    return copy
  }
}

/** `SendResult` of a delivery, but `sealed`. */
function sendResult(
  d: Delivered,
  messageId: string,
  conversationId: string,
): Omit<SendResult, 'sealed'> {
  const viaRelay = d.receipt.target.kind === 'relay'
  return {
    messageId,
    conversationId,
    route: viaRelay ? 'relay' : 'direct',
    transport: d.transport.protocol,
    ...(viaRelay && d.receipt.url ? { relayUrl: d.receipt.url } : {}),
    ...(d.receipt.pending ? { pending: true } : {}),
  }
}

/**
 * The introduction token to sign with: the one given (and kept); else the held token that
 * introduces `to` (a token introduces one peer, PROFILE §5); else the only one held that
 * introduces nobody yet.
 */
async function token(c: SendContext, given: string | undefined, to: string): Promise<string> {
  if (given !== undefined) {
    await c.addToken(given)
    return given
  }
  const held = (await c.storage.list('keys/secret/'))
    .map(([, value]) => value)
    .filter((value): value is string => typeof value === 'string')
  const unbound: string[] = []
  for (const t of held) {
    const peer = await c.tokenPeer(t)
    if (peer === to) return t
    if (peer === undefined) unbound.push(t)
  }
  if (unbound.length === 1) return unbound[0]!
  throw new TypeError(
    held.length === 0
      ? 'authLevel 0 needs an introduction token: call introduce(token) or pass options.introduction'
      : `no single introduction token for ${to}: introduce(token, { agent }) or pass options.introduction`,
  )
}
