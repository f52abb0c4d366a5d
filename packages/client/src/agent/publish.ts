/**
 * Publishing to a relay topic (SPEC §2.9, PROFILE §9), part of the send chunk. The body is
 * sealed for the members, one part each (PROFILE §8 allows one message sealed for several
 * recipients "or sent to a topic"), with keys resolved as for a send, plus the publisher's own
 * part so its other devices and its own history can read it; then signed, and kept in the
 * outbox until one of the agent's relays stored it. Membership is the caller's list: it decides
 * who can open this message, not the ones already sent.
 */
import { AgentMsgError, createMessage, signMessage } from '@agentmsg/core'
import type { SealRecipient } from '@agentmsg/core/sealed-box'
import { bodyOf, recipientKey, type SendContext, sized } from './send.js'
import type { Content, PublishOptions, PublishResult } from './types.js'

/** The conversation of a topic's messages unless one is given: the same for every publisher. */
export const topicConversation = (topic: string) =>
  `topic.${topic.replaceAll('/', ':')}`.slice(0, 128)

export async function publishMessage(
  c: SendContext,
  topic: string,
  content: Content,
  o: PublishOptions,
): Promise<PublishResult> {
  const relay = c.transports.find((t) => t.protocol === 'relay')
  if (!relay || c.relays.length === 0) {
    throw new AgentMsgError('not_found', 'publish: this agent has no relays to publish to')
  }
  const members = [...new Set(o.members ?? [])]
  if (members.length === 0 && !o.allowPlaintext) {
    throw new AgentMsgError(
      'not_found',
      `publish to ${topic}: no members to seal for; name them (members) or pass allowPlaintext: true`,
    )
  }
  const recipients: SealRecipient[] = []
  const sealFor = members.length === 0 ? [] : [...new Set([...members, c.keys.id])]
  for (const agent of sealFor) {
    const key = await recipientKey(c, agent)
    if (!key) {
      throw new AgentMsgError('not_found', `cannot seal for ${agent}: its key is unknown; pin it`)
    }
    recipients.push(key)
  }
  const conversationId = o.conversationId ?? topicConversation(topic)
  const { sequence } = await c.conversations.take(conversationId, `topic:${topic}`)
  const { parts, contentType } = bodyOf(content)
  let message = createMessage({
    from: c.keys.id,
    to: { topic },
    conversationId,
    sequence,
    phase: o.phase ?? 'update',
    parts,
    contentType,
    date: c.now(),
    relays: [...c.relays],
    ttlSeconds: o.ttlSeconds,
  })
  if (recipients.length > 0) {
    const { sealBody } = await import('@agentmsg/core/sealed-box')
    const { body, encryption } = await sealBody(message, recipients)
    message = { ...message, body, security: { signatures: [], encryption } }
  }
  const signed = sized(await signMessage(message, c.keys.signer))
  const target = {
    kind: 'relay',
    agent: `topic:${topic}`,
    urls: c.relays,
    route: 'relay' as const,
    preference: 'ordered' as const,
    confidential: recipients.length === 0,
    durable: true,
  }
  const entry = {
    id: signed.message_id,
    targets: [{ target, protocol: relay.protocol, copy: 0 }],
    copies: [signed],
    firstAttempt: c.now(),
    attempts: 0,
    nextAttempt: c.now(),
  }
  const round = await (await c.outbox()).send(entry, o.signal)
  const ids = { messageId: signed.message_id, conversationId, topic }
  const sealedFor = recipients.map((r) => r.agent)
  if ('pending' in round) return { ...ids, sealedFor, pending: true }
  if (!round.ok) throw round.error
  return { ...ids, sealedFor, relayUrl: round.receipt.url }
}
