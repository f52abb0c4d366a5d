/**
 * `createAgent`: load (or create) the identity, build the receive side and the transports,
 * and start listening.
 */
import {
  type DeliveryEvent,
  type DeliveryHandler,
  isAgentMsgError,
  namespacedStorage,
  type Transport,
  type TransportComponents,
  type TransportFactory,
  type UnsignedMessage,
} from '@agentmsg/core'
import { AgentImpl } from './agent.js'
import { createContacts } from './contacts.js'
import { Conversations } from './conversations.js'
import { lazyDocuments } from './documents.js'
import { AgentEmitter } from './events.js'
import { OwnKeys, relayList } from './identity.js'
import { migrateStorage } from './migrate.js'
import { PeerRelays } from './peers.js'
import type { ReceiveSide } from './receive.js'
import { Router } from './route.js'
import { Sealing } from './seal.js'
import { copies, type SendContext } from './send.js'
import { defaultTransports, lazyIdentityFetcher } from './transports.js'
import type { Agent, AgentOptions } from './types.js'

/** @internal What `createNodeAgent` adds to an agent. */
export interface AgentExtras {
  /** A transport of `options.transports` that listens even for a `sendOnly` agent: the Node inbox the caller asked for. */
  serving?: TransportFactory
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
  const storage = options.storage ?? (await import('@agentmsg/core')).memoryStorage()
  const now = options.now ?? Date.now
  await migrateStorage(storage)
  const keys = await OwnKeys.load(storage, options, now)
  const relays = relayList(options.relays ?? [], 'relays')
  const events = new AgentEmitter(options.onError)
  // The receive side (receiver, key store, auth levels) is a chunk of its own, imported now
  // without waiting: sending does not need it, and it is there by the first delivery (issue 12).
  let receiving: Promise<ReceiveSide> | undefined
  const side = (): Promise<ReceiveSide> => {
    const current = (receiving ??= import('./receive.js').then((m) =>
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
    ))
    // A chunk that did not download is tried again on the next need.
    current.catch(() => {
      if (receiving === current) receiving = undefined
    })
    return current
  }
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
    identityDocument: () => keys.document,
    // The receiver below opens sealed bodies with the agent's seeds (PROFILE §8).
    encryption: ['sealed_box'],
    now,
    onError: (error) => events.error({ error }),
    onOutcome: (event) => outcome(events, event),
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
    onError: (error) => events.error({ error }),
  })
  const send: SendContext = {
    keys,
    relays,
    storage,
    now,
    router,
    sealing: new Sealing({
      relayTrust: options.relayTrust,
      documents,
      keyStore: async () => (await side()).keyStore,
    }),
    peers,
    conversations,
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
  })
  try {
    // Every transport hands what it receives to the one receiver.
    for (const t of listening) await t.listen?.(receive)
  } catch (error) {
    await agent.close()
    throw error
  }
  return agent
}

/** A transport finished a `durable` delivery later: tell the application. */
function outcome(events: AgentEmitter, e: DeliveryEvent): void {
  const base = {
    messageId: e.messageId,
    to: e.target.agent,
    route: e.target.kind === 'relay' ? ('relay' as const) : ('direct' as const),
  }
  if (e.type === 'delivered') void events.emit('delivered', base)
  else {
    void events.emit('undeliverable', {
      ...base,
      reason: e.reason,
      ...(e.code !== undefined ? { code: e.code } : {}),
    })
  }
}

/**
 * Sign and deliver an error phase message for the receiver (PROFILE §7), with this agent's
 * relays so a did:key peer can answer. No route to the peer: nothing to do. Sealed through
 * untrusted relays when the peer's key is known, as any send; an error body names only a code,
 * so it goes in plaintext when the key is not.
 */
async function errorReply(
  c: SendContext,
  message: UnsignedMessage,
  to: { agent: string; inbox?: string; relays?: string[] },
): Promise<void> {
  const from = (message as { from: { agent: string; relays?: string[] } }).from
  const unsigned =
    c.relays.length && !from.relays
      ? ({ ...message, from: { ...from, relays: [...c.relays] } } as UnsignedMessage)
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
  const sealing = await c.sealing.plan(targets, to.agent, { allowPlaintext: true })
  await c.router.deliver(
    sealing.targets,
    copies(unsigned, c.keys.signer, undefined, sealing),
    undefined,
    true,
  )
}
