/**
 * Sending: a message is numbered in its conversation, signed (twice for a level-0
 * introduction through relays, PROFILE §9), and tried over the router's targets: once, or
 * through the outbox when a target is durable.
 */
import {
  AgentMsgError,
  type BodyPart,
  createMessage,
  createMessageId,
  type DeliveryTarget,
  hmacSigner,
  type JsonValue,
  type Message,
  PROFILE,
  parseAgentId,
  type Signer,
  type Storage,
  signMessage,
} from '@agentmsg/core'
import { canonicalizeToBytes } from '@agentmsg/core/http'
import type { Conversations } from './conversations.js'
import { type OwnKeys, relayList } from './identity.js'
import type { Outbox } from './outbox.js'
import type { PeerRelays } from './peers.js'
import { type Round, type Router, tryTargets } from './route.js'
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
  /** The durable outbox, loaded on first use. */
  outbox: () => Promise<Outbox>
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
  const copy = copies(unsigned, c.keys.signer, hmac, sealing)
  const ids = { messageId: unsigned.message_id, conversationId }
  const targets = sealing.targets
  // Decided once, before anything goes out (PROFILE §6).
  const durable = targets.find((t) => t.target.durable)
  if (!durable) {
    return result(await tryTargets(targets, copy, options.signal), ids, sealing)
  }
  const messages = await Promise.all(targets.map((t) => copy(t.target)))
  const unique = [...new Set(messages)]
  const outbox = await c.outbox()
  const first = await outbox.send(
    {
      id: unsigned.message_id,
      targets: targets.map((t, i) => ({
        target: t.target,
        protocol: t.transport.protocol,
        copy: unique.indexOf(messages[i]!),
      })),
      copies: unique,
      firstAttempt: c.now(),
      attempts: 0,
      nextAttempt: c.now(),
    },
    options.signal,
  )
  if (!('pending' in first)) return result(first, ids, sealing)
  const { target, transport } = durable
  return {
    ...ids,
    route: target.route,
    transport: transport.protocol,
    sealed: sealing.seals(target),
    pending: true,
  }
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
  hmac?: Signer,
  sealing?: SealPlan,
): (target: DeliveryTarget) => Promise<Message> {
  let sealedBody: Promise<Message> | undefined
  const made = new Map<string, Promise<Message>>()
  return (target) => {
    const sealed = sealing?.recipient !== undefined && sealing.seals(target)
    const both = target.route === 'relay' && hmac !== undefined
    const kind = `${sealed}/${both}`
    let copy = made.get(kind)
    if (!copy) {
      const base = sealed
        ? (sealedBody ??= sealMessage(unsigned, sealing!.recipient!))
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
function sized(message: Message): Message {
  const bytes = canonicalizeToBytes(message).byteLength
  if (bytes > PROFILE.maxMessageBytes) {
    throw new AgentMsgError(
      'payload_too_large',
      `the message is ${bytes} bytes; at most ${PROFILE.maxMessageBytes} are sent (PROFILE §6)`,
    )
  }
  return message
}

/** The send's result from a round, or its failure. */
function result(
  round: Round,
  ids: { messageId: string; conversationId: string },
  sealing: SealPlan,
): SendResult {
  if (!round.ok) throw round.error
  const { target, url } = round.receipt
  return {
    ...ids,
    route: target.route,
    transport: round.transport,
    ...(target.route === 'relay' && url ? { relayUrl: url } : {}),
    sealed: sealing.seals(target),
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
