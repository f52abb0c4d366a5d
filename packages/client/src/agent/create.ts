/** `createAgent`: the identity, the transports, the receive side and the send path. */
import {
  type DeliveryHandler,
  namespacedStorage,
  normalizeAgentUrl,
  type Storage,
  type Transport,
  type TransportComponents,
  type TransportFactory,
} from '@agentmsg/core'
import { AgentImpl } from './agent.js'
import { createContacts } from './contacts.js'
import { type Documents, lazy, lazyDocuments } from './documents.js'
import { AgentEmitter } from './events.js'
import { OwnKeys, relayList } from './identity.js'
import type { Clock } from './outbox.js'
import { Conversations, PeerRelays } from './peers.js'
import type { SendContext } from './send.js'
import { loadTopics } from './topics.js'
import { defaultTransports, lazyIdentityFetcher } from './transports.js'
import type { Agent, AgentOptions, RelayTrust } from './types.js'

/** What the receive side and the send path share, built once by `openAgent`. */
export interface AgentShared {
  keys: OwnKeys
  storage: Storage
  now: () => number
  documents: Documents
  peers: PeerRelays
  conversations: Conversations
  events: AgentEmitter
  /** The topics subscribed to, read live by the receiver (./topics.ts). */
  topics: Set<string>
}

/** @internal What `createNodeAgent` adds to an agent. */
export interface AgentExtras {
  /** A transport that listens even for a `sendOnly` agent: the Node inbox asked for. */
  serving?: TransportFactory
  /** The outbox's schedule (tests). */
  clock?: Clock
  random?: () => number
}

/**
 * Create an agent: load (or create and persist) its identity, start its transports (relay
 * streams on its relays) and resume pending deliveries.
 */
export async function createAgent(options: AgentOptions = {}): Promise<Agent> {
  return openAgent(options)
}

/** @internal `createAgent` with extras. */
export async function openAgent(
  options: AgentOptions,
  extras: AgentExtras = {},
): Promise<AgentImpl> {
  // The in-memory default is imported only when no storage is given (browsers pass IndexedDB).
  const storage = options.storage ?? (await import('./memory.js')).memoryStorage()
  const now = options.now ?? Date.now
  const keys = await OwnKeys.load(storage, options, now)
  const relays = relayList(options.relays ?? [], 'relays')
  const events = new AgentEmitter(options.onError)
  const documents = lazyDocuments({
    fetch: options.resolveIdentity ?? lazyIdentityFetcher(options.fetch),
    now,
    // Introduced keys a fetched document lacks are dropped (PROFILE §5).
    onDocument: async (document) => (await side()).keyStore.reconcileWithDocument(document),
  })
  const peers = new PeerRelays(storage, now)
  const conversations = new Conversations(storage)
  const topics = await loadTopics(storage)
  const shared: AgentShared = {
    keys,
    storage,
    now,
    documents,
    peers,
    conversations,
    events,
    topics,
  }
  // The receive side (receiver, key store, auth levels) is a chunk of its own, imported now
  // without waiting: sending does not need it, and it is there by the first delivery.
  const side = lazy(() =>
    import('./receive.js').then((m) =>
      m.openReceiveSide({
        ...shared,
        errorReplies: {
          send: async (message, to) => (await sendPath()).errorReply(send, message, to),
        },
      }),
    ),
  )
  const components: Omit<TransportComponents, 'storage' | 'onError'> = {
    agentId: keys.id,
    signer: keys.liveSigner,
    resolver: { resolve: async (lookup, o) => (await side()).resolver.resolve(lookup, o) },
    relays,
    trusts: relayTrusts(options.relayTrust ?? {}),
    identityDocument: () => keys.document,
    // The receiver opens sealed bodies with the agent's seeds (PROFILE §8).
    encryption: ['sealed_box'],
    now,
  }
  const transports: Transport[] = []
  const listening: Transport[] = []
  try {
    for (const factory of options.transports ?? defaultTransports(options)) {
      // Each transport's own state (cursors, subscriptions) under `<protocol>/`.
      const transport = await factory.create({
        ...components,
        storage: namespacedStorage(storage, `${factory.protocol}/`),
        onError: (error) => events.error({ error, transport: factory.protocol }),
      })
      transports.push(transport)
      if (!options.sendOnly || factory === extras.serving) listening.push(transport)
    }
  } catch (error) {
    await Promise.allSettled(transports.map((t) => t.close()))
    throw error
  }
  // The send path (routing, sealing, copies, the outbox) is a chunk of its own, imported on the
  // first send, error reply or outbox resume: an agent's start does not wait for it.
  const sendPath = lazy(() => import('./send.js'))
  const send: SendContext = {
    ...shared,
    relays,
    transports,
    fallbackToRelay: options.fallbackToRelay !== false,
    keyStore: async () => (await side()).keyStore,
    outbox: () => loadOutbox(),
    schedule: { clock: extras.clock, random: extras.random },
  }
  const loadOutbox = lazy(async () => (await sendPath()).openOutbox(send))
  // Started now, not awaited: a failure to load is reported, and the next need tries again.
  side().catch((error: unknown) => events.error({ error }))
  const receive: DeliveryHandler = async (delivery) => (await side()).receive(delivery)
  const agent = new AgentImpl({
    ...shared,
    contacts: createContacts({ storage, side, peers }),
    send: async (to, content, o) => (await sendPath()).sendMessage(send, to, content, o),
    // Publishing is a chunk of its own, loaded on the first publish.
    publish: async (topic, content, o) =>
      (await import('./publish.js')).publishMessage(send, topic, content, o),
    transports,
    side,
    outbox: loadOutbox.peek,
  })
  try {
    for (const t of listening) await t.listen?.(receive)
    // Deliveries an earlier run left are taken up again (PROFILE §6: they survive a restart).
    if (transports.length > 0 && (await storage.list('outbox/', { limit: 1 })).length > 0) {
      await (await loadOutbox()).resume()
    }
  } catch (error) {
    await agent.close()
    throw error
  }
  return agent
}

/**
 * Whether the agent trusts the relay at a URL with bodies (SPEC §5.7.2): `trusted` or
 * `self-operated` in `relayTrust`; every other relay is `untrusted`.
 */
function relayTrusts(given: Record<string, RelayTrust>): (url: string) => boolean {
  const trusted = new Set<string>()
  for (const [url, trust] of Object.entries(given)) {
    if (!['untrusted', 'trusted', 'self-operated'].includes(trust)) {
      throw new TypeError(
        `relayTrust[${JSON.stringify(url)}] must be 'untrusted', 'trusted' or 'self-operated'`,
      )
    }
    if (trust !== 'untrusted') trusted.add(normalizeAgentUrl(url))
  }
  return (url) => {
    try {
      return trusted.has(normalizeAgentUrl(url))
    } catch {
      return false
    }
  }
}
