/**
 * `createAgent`: load (or create) the identity, build the receive side and the transports,
 * and start listening.
 */
import {
  type DeliveryHandler,
  isAgentMsgError,
  type Message,
  namespacedStorage,
  type Transport,
  type TransportComponents,
  type TransportFactory,
} from '@agentmsg/core'
import { AgentImpl } from './agent.js'
import { createContacts } from './contacts.js'
import { Conversations } from './conversations.js'
import { lazy, lazyDocuments } from './documents.js'
import { AgentEmitter } from './events.js'
import { OwnKeys, relayList } from './identity.js'
import type { Clock, OutboxEntry, Outcome } from './outbox.js'
import { PeerRelays } from './peers.js'
import { type PlannedTarget, type Round, Router, tryTargets } from './route.js'
import { relayTrusts, Sealing } from './seal.js'
import { copies, type SendContext } from './send.js'
import { defaultTransports, lazyIdentityFetcher } from './transports.js'
import type { Agent, AgentOptions } from './types.js'

/** @internal What `createNodeAgent` adds to an agent. */
export interface AgentExtras {
  /** A transport of `options.transports` that listens even for a `sendOnly` agent: the Node inbox the caller asked for. */
  serving?: TransportFactory
  /** The outbox's schedule (tests). */
  clock?: Clock
  random?: () => number
}

/**
 * Create an agent: load (or create and persist) its identity, start its transports (relay
 * streams on its relays) and resume pending deliveries.
 *
 * @example
 * const alice = await createAgent({ relays: ['https://relay.example'], storage })
 * alice.on('message', async (m) => { await alice.reply(m, `got: ${m.text}`) })
 * await alice.send('https://bob.example', 'hello')
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
  // The receive side (receiver, key store, auth levels) is a chunk of its own, imported now
  // without waiting: sending does not need it, and it is there by the first delivery.
  const side = lazy(() =>
    import('./receive.js').then((m) =>
      m.openReceiveSide({
        agentId: keys.id,
        storage,
        now,
        documents,
        peers,
        conversations,
        events,
        errorReplies: { send: (message, to) => errorReply(send, message, to) },
        seedFor: (keyId) => keys.seedFor(keyId),
      }),
    ),
  )
  const documents = lazyDocuments({
    fetch: options.resolveIdentity ?? lazyIdentityFetcher(options.fetch),
    now,
    // Introduced keys a fetched document lacks are dropped (PROFILE §5).
    onDocument: async (document) => (await side()).keyStore.reconcileWithDocument(document),
  })
  const peers = new PeerRelays(storage, now)
  const conversations = new Conversations(storage)

  const components: Omit<TransportComponents, 'storage'> = {
    agentId: keys.id,
    signer: keys.liveSigner,
    resolver: {
      resolve: async (lookup, resolveOptions) =>
        (await side()).resolver.resolve(lookup, resolveOptions),
    },
    relays,
    trusts: relayTrusts(options.relayTrust ?? {}),
    identityDocument: () => keys.document,
    // The receiver below opens sealed bodies with the agent's seeds (PROFILE §8).
    encryption: ['sealed_box'],
    now,
    onError: (error) => events.error({ error }),
  }
  const factories = options.transports ?? defaultTransports(options)
  const transports: Transport[] = []
  const listening: Transport[] = []
  try {
    for (const factory of factories) {
      // Each transport's own state (outbox, cursors, subscriptions) under `<protocol>/`.
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

  const router = new Router({
    transports,
    documents,
    peers,
    fallbackToRelay: options.fallbackToRelay !== false,
  })
  const loadOutbox = lazy(() =>
    import('./outbox.js').then(
      ({ Outbox }) =>
        new Outbox({
          storage,
          deliver: (entry, signal) => deliverEntry(transports, entry, signal),
          onOutcome: (entry, o) => outcome(events, entry, o),
          ...(extras.clock ? { clock: extras.clock } : {}),
          ...(extras.random ? { random: extras.random } : {}),
        }),
    ),
  )
  const send: SendContext = {
    keys,
    relays,
    storage,
    now,
    router,
    sealing: new Sealing({
      documents,
      keyStore: async () => (await side()).keyStore,
    }),
    peers,
    conversations,
    outbox: loadOutbox,
    addToken: async (token) => (await side()).keyStore.addIntroductionToken(token),
    tokenPeer: async (token) => (await side()).keyStore.introducedPeer(token),
  }
  // Started now, not awaited: a failure to load is reported, and the next need tries again.
  side().catch((error: unknown) => events.error({ error }))
  const receive: DeliveryHandler = async (delivery) => (await side()).receive(delivery)
  const agent = new AgentImpl({
    keys,
    events,
    contacts: createContacts({ storage, side, peers }),
    conversations,
    send,
    transports,
    side,
    outbox: loadOutbox.peek,
  })
  try {
    // Every transport hands what it receives to the one receiver.
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

/** @internal One round over a stored entry's targets, with the transports this agent has. */
export function deliverEntry(
  transports: readonly Transport[],
  entry: OutboxEntry,
  signal?: AbortSignal,
): Promise<Round> {
  const planned: Array<PlannedTarget & { copy: number }> = []
  for (const { target, protocol, copy } of entry.targets) {
    const transport = transports.find((t) => t.protocol === protocol)
    if (transport) planned.push({ target, transport, copy })
  }
  return tryTargets(planned, async (_target, i) => entry.copies[planned[i]!.copy]!, signal)
}

/** A send that resolved pending ended later: tell the application. */
function outcome(events: AgentEmitter, entry: OutboxEntry, o: Outcome): void {
  const durable = entry.targets.find((t) => t.target.durable) ?? entry.targets[0]!
  const base = { messageId: entry.id, to: durable.target.agent }
  if (o.type === 'delivered') {
    const { target, url } = o.round.receipt
    const relayUrl = target.route === 'relay' && url ? { relayUrl: url } : {}
    void events.emit('delivered', { ...base, route: target.route, ...relayUrl })
    return
  }
  const code = isAgentMsgError(o.error) ? { code: o.error.peerCode ?? o.error.code } : {}
  void events.emit('undeliverable', {
    ...base,
    route: durable.target.route,
    reason: o.reason,
    ...code,
  })
}

/**
 * Sign and deliver an error phase message for the receiver (PROFILE §7), with this agent's
 * relays so a did:key peer can answer. No route to the peer: nothing to do. Sealed through
 * untrusted relays when the peer's key is known, as any send; an error body names only a code,
 * so it goes in plaintext when the key is not.
 */
async function errorReply(
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
    targets = await c.router.plan({
      to: to.agent,
      route: 'auto',
      relays: to.relays ?? [],
      ...(to.inbox ? { inbox: to.inbox } : {}),
    })
  } catch (error) {
    if (isAgentMsgError(error) && error.code === 'not_found') return
    throw error
  }
  // Never durable: a stranger can trigger an error reply, and must not park retries in our
  // outbox (PROFILE §4, §7).
  const sealing = await c.sealing.plan(targets, to.agent, { allowPlaintext: true })
  const round = await tryTargets(
    sealing.targets,
    copies(unsigned, c.keys.signer, undefined, sealing),
  )
  if (!round.ok) throw round.error
}
