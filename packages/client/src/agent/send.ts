/**
 * The send path, a chunk loaded on the first send: a message is numbered in its conversation,
 * signed (twice for a level-0 introduction through relays, PROFILE §9), and tried over the
 * router's targets: once, or through the outbox when a target is durable.
 */
import {
  type BodyPart,
  createMessage,
  createMessageId,
  type DeliveryReceipt,
  hmacSigner,
  isAgentMsgError,
  type JsonValue,
  type Message,
  type Transport,
} from '@agentmsg/core'
import { type TraceSpan, traced } from '@agentmsg/core/http'
import type { KeyStore } from '@agentmsg/core/receive'
import type { AgentShared } from './create.js'
import type { Outbox, OutboxEntry, OutboxOptions, Outcome } from './outbox.js'
import { deliverEntry, planRoute, type Round, tryTargets } from './route.js'
import { copies, planSealing, type SealPlan } from './seal.js'
import type { Content, SendOptions, SendResult } from './types.js'

/** What sending needs from the agent. */
export interface SendContext extends AgentShared {
  relays: readonly string[]
  transports: readonly Transport[]
  /** Relay targets after direct ones with `route: 'auto'`. */
  fallbackToRelay: boolean
  /** The key store loads with the receive side (./receive.ts). */
  keyStore: () => Promise<KeyStore>
  /** The durable outbox, loaded on first use. */
  outbox: () => Promise<Outbox>
  /** The outbox's schedule (tests). */
  schedule: Pick<OutboxOptions, 'clock' | 'random'>
}

/** Send to `recipient` (a parsed agent id) with `options.relays` checked (./agent.ts). */
export function sendMessage(c: SendContext, recipient: string, content: Content, o: SendOptions) {
  return traced('agentmsg.send', 'PRODUCER', undefined, send, c, [recipient, content, o] as const)
}

async function send(
  span: TraceSpan | undefined,
  c: SendContext,
  [recipient, content, options]: readonly [string, Content, SendOptions],
): Promise<SendResult> {
  // Remembered for the peer once one took a message (`delivered`): a mistyped or dead relay
  // must not be tried, and blamed, on later sends.
  const given = options.relays ?? []
  const conversationId = options.conversationId ?? createMessageId(c.now())
  // Numbered and persisted before anything goes out.
  const { sequence, isNew } = await c.conversations.take(conversationId, recipient)
  const { parts, contentType } = bodyOf(content)
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
    contentType,
    date: c.now(),
    relays: c.relays.length ? [...c.relays] : undefined,
    authLevel: options.authLevel,
    ttlSeconds: options.ttlSeconds,
  })
  const hmac = intro
    ? await hmacSigner(await token(c, options.introduction, recipient), c.keys.id)
    : undefined
  const { route = 'auto' } = options
  const planned = await planRoute(c, { to: recipient, route, relays: given })
  const sealing = await planSealing(c, planned, recipient, options)
  const copy = copies(unsigned, c.keys.signer, hmac, sealing)
  const ids = { messageId: unsigned.message_id, conversationId }
  span?.setAttributes({ 'messaging.message.id': ids.messageId })
  const targets = sealing.targets
  // Decided once, before anything goes out (PROFILE §6).
  const durable = targets.find((t) => t.target.durable)
  // Relays only (a did:key peer): tried at once, kept in the outbox only when they failed for
  // now, so a browser agent whose publishes go through never loads it. An inbox's message is
  // stored before its first attempt (PROFILE §6).
  if (!durable || targets.every((t) => t.target.route === 'relay')) {
    const round = await tryTargets(targets, copy, options.signal)
    if (!durable || round.ok || !round.retry) return result(c, recipient, round, ids, sealing)
  }
  const messages = await Promise.all(targets.map((t) => copy(t.target)))
  const unique = [...new Set(messages)]
  const entry = {
    id: unsigned.message_id,
    targets: targets.map(({ target, transport }, i) => {
      return { target, protocol: transport.protocol, copy: unique.indexOf(messages[i]!) }
    }),
    copies: unique,
    firstAttempt: c.now(),
    attempts: 0,
    nextAttempt: c.now(),
  }
  const first = await (await c.outbox()).send(entry, options.signal)
  if (!('pending' in first)) return result(c, recipient, first, ids, sealing)
  const { target, transport } = durable
  const sealed = sealing.seals(target)
  return { ...ids, route: target.route, transport: transport.protocol, sealed, pending: true }
}

/** A message's body parts and `content_type` for `content` (a send's, a publish's). */
export function bodyOf(content: Content): { parts: BodyPart[]; contentType: string } {
  if (typeof content === 'string') {
    return { parts: [{ type: 'text', text: content }], contentType: 'text/plain' }
  }
  return { parts: [...content.parts], contentType: content.contentType ?? 'application/json' }
}

/** The send's result from a round, told as `delivered` (a pending one is, by the outbox, later). */
async function result(
  c: SendContext,
  to: string,
  round: Round,
  ids: { messageId: string; conversationId: string },
  sealing: SealPlan,
): Promise<SendResult> {
  if (!round.ok) throw round.error
  const { route } = round.receipt.target
  const relayUrl = await delivered(c, ids.messageId, to, round.receipt)
  const sealed = sealing.seals(round.receipt.target)
  return { ...ids, route, transport: round.transport, relayUrl, sealed }
}

/**
 * Tell `delivered`; returns the relay that took it, if one did, which is remembered for the peer
 * (PROFILE §9): one that took a message reaches it, first.
 */
async function delivered(c: SendContext, messageId: string, to: string, r: DeliveryReceipt) {
  const relayUrl = r.target.route === 'relay' ? r.url : undefined
  if (relayUrl) await c.peers.remember(to, [relayUrl])
  void c.events.emit('delivered', { messageId, to, route: r.target.route, relayUrl })
  return relayUrl
}

/**
 * The introduction token to sign with: the one given (and kept); else the held token that
 * introduces `to` (a token introduces one peer, PROFILE §5); else the only one held that
 * introduces nobody yet.
 */
async function token(c: SendContext, given: string | undefined, to: string): Promise<string> {
  const keyStore = await c.keyStore()
  if (given !== undefined) {
    await keyStore.addIntroductionToken(given)
    return given
  }
  const held = (await c.storage.list('keys/secret/'))
    .map(([, value]) => value)
    .filter((value): value is string => typeof value === 'string')
  const unbound: string[] = []
  for (const t of held) {
    const peer = await keyStore.introducedPeer(t)
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

/** The agent's outbox, its rounds and outcomes through this agent's transports and events. */
export async function openOutbox(c: SendContext): Promise<Outbox> {
  const { Outbox } = await import('./outbox.js')
  return new Outbox({
    storage: c.storage,
    deliver: (entry, signal) => deliverEntry(c.transports, entry, signal),
    onOutcome: (entry, o) => outcome(c, entry, o),
    ...c.schedule,
  })
}

/** A send that resolved pending ended later: tell the application. */
function outcome(c: SendContext, entry: OutboxEntry, o: Outcome): void {
  const { target } = entry.targets.find((t) => t.target.durable) ?? entry.targets[0]!
  if (o.type === 'delivered')
    return void delivered(c, entry.id, target.agent, o.round.receipt).catch(() => {})
  const code = isAgentMsgError(o.error) ? { code: o.error.peerCode ?? o.error.code } : {}
  const { route, agent: to } = target
  void c.events.emit('undeliverable', { messageId: entry.id, to, route, reason: o.reason, ...code })
}

/**
 * Sign and deliver an error phase message for the receiver (PROFILE §7), with this agent's
 * relays so a did:key peer can answer. No route to the peer: nothing to do. Sealed through
 * untrusted relays when the peer's key is known, as any send; an error body names only a code,
 * so it goes in plaintext when the key is not.
 */
export async function errorReply(
  c: SendContext,
  message: Message,
  to: { agent: string; inbox?: string; relays?: string[] },
): Promise<void> {
  const from = (message as { from: { agent: string; relays?: string[] } }).from
  const unsigned =
    c.relays.length && !from.relays
      ? ({ ...message, from: { ...from, relays: [...c.relays] } } as Message)
      : message
  let targets
  try {
    const { agent, relays, inbox } = to
    targets = await planRoute(c, { to: agent, route: 'auto', relays, inbox })
  } catch (error) {
    if (isAgentMsgError(error) && error.code === 'not_found') return
    throw error
  }
  // Never durable: a stranger can trigger an error reply, and must not park retries in our
  // outbox (PROFILE §4, §7).
  const sealing = await planSealing(c, targets, to.agent, { allowPlaintext: true })
  const round = await tryTargets(
    sealing.targets,
    copies(unsigned, c.keys.signer, undefined, sealing),
  )
  if (!round.ok) throw round.error
}

// Publishing (./publish.ts, a chunk of its own) seals and sizes as a send does.
export { recipientKey, sized } from './seal.js'
