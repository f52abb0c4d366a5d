/**
 * The agent's receive side: one `Receiver` (core's `createReceiver`, the PROFILE §6 pipeline)
 * whose `receive` every transport's `listen` gets, the application dispatch it runs for each
 * accepted message, and the state it shares with contacts and introductions (key store, auth
 * levels). `createAgent` imports this module lazily (a browser agent loads less up front),
 * starting at once, so it is there when the first message arrives.
 */

import {
  type DeliveryHandler,
  type KeyResolver,
  type Message,
  parseAgentId,
  type ReceivedInfo,
  type Receiver,
  type Storage,
} from '@agentmsg/core'
import {
  AuthLevelTracker,
  chainResolvers,
  createReceiver,
  didKeyResolver,
  type ErrorReplySender,
  KeyStore,
} from '@agentmsg/core/receive'
import type { Conversations } from './conversations.js'
import type { Documents } from './documents.js'
import type { AgentEmitter } from './events.js'
import type { PeerRelays } from './peers.js'
import type { ReceivedMessage } from './types.js'

/** Refuses lower levels like its parent (PROFILE §5), and reports each refusal with its sender. */
export class ReportingAuthLevels extends AuthLevelTracker {
  readonly #report: (error: unknown, from: string) => void

  constructor(
    options: ConstructorParameters<typeof AuthLevelTracker>[0],
    report: (error: unknown, from: string) => void,
  ) {
    super(options)
    this.#report = report
  }

  override async evaluate(
    input: Parameters<AuthLevelTracker['evaluate']>[0],
  ): ReturnType<AuthLevelTracker['evaluate']> {
    try {
      return await super.evaluate(input)
    } catch (error) {
      this.#report(error, input.from)
      throw error
    }
  }
}

export interface AgentReceiverOptions {
  agentId: string
  storage: Storage
  now: () => number
  resolver: KeyResolver
  documents: Documents
  keyStore: KeyStore
  levels: ReportingAuthLevels
  peers: PeerRelays
  conversations: Conversations
  events: AgentEmitter
  errorReplies: ErrorReplySender
  /** The seed of one of this agent's keys by full key id: opens sealed bodies (PROFILE §8). */
  seedFor: (keyId: string) => Uint8Array | undefined
}

/** The receive side of an agent, and what contacts and introductions share with it. */
export interface ReceiveSide {
  keyStore: KeyStore
  /** PROFILE §4's chain: identity documents → did:key → pins and introductions. */
  resolver: KeyResolver
  levels: ReportingAuthLevels
  receiver: Receiver
  receive: DeliveryHandler
  /** Resolves once the messages being handed to the application now are handled. */
  idle: () => Promise<void>
}

/** Build the receive side: key store, auth levels, the resolver chain and the receiver. */
export function openReceiveSide(
  o: Omit<AgentReceiverOptions, 'resolver' | 'keyStore' | 'levels'>,
): ReceiveSide {
  const keyStore = new KeyStore({ storage: o.storage, now: o.now })
  const levels = new ReportingAuthLevels({ storage: o.storage, now: o.now }, (error, from) =>
    o.events.error({ error, from }),
  )
  // PROFILE §4: identity documents (loaded for URL agents only) → did:key → pins/introductions.
  const resolver = chainResolvers(o.documents, didKeyResolver(), keyStore)
  return {
    keyStore,
    resolver,
    levels,
    ...createAgentReceiver({ ...o, resolver, keyStore, levels }),
  }
}

/** The agent's one Receiver, and the handler to give every transport. */
export function createAgentReceiver(o: AgentReceiverOptions): {
  receiver: Receiver
  receive: DeliveryHandler
  /** Resolves once the messages being handed to the application now are handled. */
  idle: () => Promise<void>
} {
  const handing = new Set<Promise<void>>()
  const receiver = createReceiver({
    agentId: o.agentId,
    resolver: o.resolver,
    storage: o.storage,
    authLevels: o.levels,
    opener: { agent: o.agentId, ed25519Seed: o.seedFor },
    onMessage: async (message, info) => {
      await o.events.waitForConsumer()
      const run = dispatch(o, message, info)
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
    // A level refusal was reported with its sender already (ReportingAuthLevels); one for now
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
  const idle = async () => {
    await Promise.allSettled([...handing])
  }
  return { receiver, receive, idle }
}

/**
 * What happens to an accepted message once there is a consumer: keys introduced by a level-0
 * greeting (PROFILE §5), the sender's verified relays, the conversation's sequence, then the
 * application.
 */
async function dispatch(o: AgentReceiverOptions, message: Message, info: ReceivedInfo) {
  const from = message.from.agent
  let { knownContact } = info
  if (info.level === 0 && message.phase === 'greeting') {
    try {
      // Identity documents are loaded only now, for a greeting that may carry one (PROFILE §5).
      const { introducedIdentity } = await import('./url-identity.js')
      const doc = introducedIdentity(message)
      if (doc && (await o.keyStore.addIntroducedKeys(doc)).length > 0) await reconcile(o, from)
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
    text: textOf(message),
    sealed: info.sealed,
  }
  await o.events.dispatch(received)
}

/**
 * A URL agent's introduced keys count only while its identity document cannot be fetched: the
 * fetched document is final (PROFILE §5), so keys it does not list are dropped now. (Fetches
 * made later reconcile too, through the document cache's `onDocument`.)
 */
async function reconcile(o: AgentReceiverOptions, agent: string): Promise<void> {
  if (parseAgentId(agent).kind !== 'url') return
  const doc = await o.documents.document(agent)
  if (!('status' in doc)) await o.keyStore.reconcileWithDocument(doc)
}

/** Plain text of the text parts, joined by LF. */
function textOf(message: Message): string {
  const out: string[] = []
  for (const p of message.body.parts) if (p.type === 'text') out.push(p.text)
  return out.join('\n')
}
