/**
 * The agent's receive side: one `Receiver` (core's PROFILE §6 pipeline) that every transport
 * feeds, the dispatch of each accepted message to the application, and the key store and auth
 * levels it shares with contacts. A chunk `createAgent` imports at once without waiting.
 */

import {
  type DeliveryHandler,
  type KeyResolver,
  type Message,
  parseAgentId,
  type ReceivedInfo,
  type Receiver,
} from '@agentmsg/core'
import {
  AuthLevelTracker,
  chainResolvers,
  createReceiver,
  didKeyResolver,
  type ErrorReplySender,
  KeyStore,
} from '@agentmsg/core/receive'
import type { AgentShared } from './create.js'
import type { ReceivedMessage } from './types.js'

export type ReceiveSideOptions = AgentShared & { errorReplies: ErrorReplySender }

/**
 * The receive side of an agent: what contacts and introductions share with it, the handler
 * every transport's `listen` gets, and `idle()`: once the messages handed over now are handled.
 */
export interface ReceiveSide {
  keyStore: KeyStore
  resolver: KeyResolver
  levels: AuthLevelTracker
  receiver: Receiver
  receive: DeliveryHandler
  idle: () => Promise<void>
}

/** Build the receive side: key store, auth levels, the resolver chain and the one Receiver. */
export function openReceiveSide(o: ReceiveSideOptions): ReceiveSide {
  const keyStore = new KeyStore({ storage: o.storage, now: o.now })
  const levels = new AuthLevelTracker({ storage: o.storage, now: o.now })
  // Refuses lower levels as ever (PROFILE §5), and reports each refusal with its sender.
  const evaluate = levels.evaluate.bind(levels)
  levels.evaluate = (input) =>
    evaluate(input).catch((error: unknown) => {
      o.events.error({ error, from: input.from })
      throw error
    })
  // PROFILE §4: identity documents (loaded for URL agents only) → did:key → pins/introductions.
  const resolver = chainResolvers(o.documents, didKeyResolver(), keyStore)
  const side = { ...o, keyStore, levels }
  const handing = new Set<Promise<void>>()
  const receiver = createReceiver({
    agentId: o.keys.id,
    topics: o.topics,
    resolver,
    storage: o.storage,
    authLevels: levels,
    // Sealed bodies open with the agent's seeds (PROFILE §8).
    opener: { agent: o.keys.id, ed25519Seed: (keyId) => o.keys.seedFor(keyId) },
    onMessage: async (message, info) => {
      await o.events.waitForConsumer()
      const run = dispatch(side, message, info)
      handing.add(run)
      try {
        await run
      } finally {
        handing.delete(run)
      }
    },
    onError: (error) => o.events.error({ error }),
    errorReplies: o.errorReplies,
    identityOf: async (agent) => {
      const doc = await o.documents.document(agent)
      return 'status' in doc ? undefined : doc
    },
    now: o.now,
  })
  const receive: DeliveryHandler = async (delivery) => {
    const outcome = await receiver.receive(delivery)
    // A level refusal was reported with its sender already (above); one for now
    // (queue full, closing) is the transport's to deliver again.
    if (
      outcome.status === 'refused' &&
      !outcome.retry &&
      outcome.error.code !== 'insufficient_auth_level'
    ) {
      o.events.error({ error: outcome.error, transport: delivery.transport })
    }
    return outcome
  }
  const idle = () => Promise.allSettled([...handing]).then(() => undefined)
  return { keyStore, resolver, levels, receiver, receive, idle }
}

/**
 * What happens to an accepted message once there is a consumer: keys introduced by a level-0
 * greeting (PROFILE §5), the sender's verified relays, the conversation's sequence, then the
 * application.
 */
async function dispatch(
  o: ReceiveSideOptions & Pick<ReceiveSide, 'keyStore' | 'levels'>,
  message: Message,
  info: ReceivedInfo,
) {
  const from = message.from.agent
  let { knownContact } = info
  if (info.level === 0 && message.phase === 'greeting') {
    try {
      // Identity documents are loaded only now, for a greeting that may carry one (PROFILE §5).
      const { introducedIdentity } = await import('./url-identity.js')
      const doc = introducedIdentity(message)
      // A URL agent's introduced keys count only while its document cannot be fetched: the
      // fetched one is final (PROFILE §5), so keys it lacks go now (later fetches reconcile
      // through the document cache's `onDocument`).
      const added = doc ? await o.keyStore.addIntroducedKeys(doc) : []
      if (added.length > 0 && parseAgentId(from).kind === 'url') {
        const fetched = await o.documents.document(from)
        if (!('status' in fetched)) await o.keyStore.reconcileWithDocument(fetched)
      }
    } catch (error) {
      o.events.error({ error, message, from, transport: info.transport })
    }
    if (info.source === 'shared-secret') {
      await o.levels.markKnownContact(from, 'introduced')
      knownContact = true
    }
  }
  // Only a verified message's relays are remembered as where the sender can be reached.
  const relays = message.from.relays
  if (Array.isArray(relays) && relays.length > 0) await o.peers.remember(from, relays)
  await o.conversations.seen(message.conversation_id, from, message.sequence)
  const received: ReceivedMessage = {
    message,
    level: info.level,
    source: info.source,
    knownContact,
    transport: info.transport,
    conversationId: message.conversation_id,
    from,
    // Of the opened body when it was sealed (the receiver hands over the opened message).
    text: message.body.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n'),
    sealed: info.sealed,
    ...(message.to.topic !== undefined ? { topic: message.to.topic } : {}),
  }
  await o.events.dispatch(received)
}
