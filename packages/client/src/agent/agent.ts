/** The Agent that `createAgent` (create.ts) builds from its parts. */
import type { IdentityDocument, Message, Transport } from '@agentmsg/core'
import { parseAgentId } from '@agentmsg/core/http'
import type { AgentShared } from './create.js'
import { lazy } from './documents.js'
import { relayList } from './identity.js'
import type { Outbox } from './outbox.js'
import type { ReceiveSide } from './receive.js'
import { checkTopic } from './topics.js'
import type {
  Agent,
  AgentEvents,
  AgentListener,
  Contacts,
  Content,
  Group,
  IntroduceOptions,
  OwnIdentity,
  PublishOptions,
  PublishResult,
  ReceivedMessage,
  SendOptions,
  SendResult,
  SubscribeOptions,
} from './types.js'

/** The parts an agent is made of. */
export interface AgentParts extends AgentShared {
  contacts: Contacts
  /** The send path (./send.ts) and the receive side (./receive.ts) are chunks of their own. */
  send: (to: string, content: Content, options: SendOptions) => Promise<SendResult>
  publish: (topic: string, content: Content, options: PublishOptions) => Promise<PublishResult>
  transports: readonly Transport[]
  side: () => Promise<ReceiveSide>
  /** The outbox, when it was loaded. */
  outbox: () => Promise<Outbox> | undefined
}

export class AgentImpl implements Agent {
  readonly id: string
  readonly contacts: Contacts
  readonly #p: AgentParts
  #closed = false
  #closing: Promise<void> | undefined

  constructor(parts: AgentParts) {
    this.#p = parts
    this.id = parts.keys.id
    this.contacts = parts.contacts
  }

  get identity(): OwnIdentity {
    return this.#p.keys.identity
  }

  async send(to: string, content: Content, options: SendOptions = {}): Promise<SendResult> {
    if (this.#closed) throw new TypeError('send: this agent is closed')
    const recipient = parseAgentId(to, 'to').id
    const relays = relayList(options.relays ?? [], 'options.relays')
    return this.#p.send(recipient, content, { ...options, relays })
  }

  async subscribe(topic: string, options: SubscribeOptions = {}): Promise<void> {
    if (this.#closed) throw new TypeError('subscribe: this agent is closed')
    const { storage, topics, transports } = this.#p
    const { subscribeTopic } = await import('./topic-ops.js')
    await subscribeTopic(storage, topics, transports, topic, options)
  }

  async unsubscribe(topic: string): Promise<void> {
    const { storage, topics, transports } = this.#p
    const { unsubscribeTopic } = await import('./topic-ops.js')
    await unsubscribeTopic(storage, topics, transports, topic)
  }

  topics(): string[] {
    return [...this.#p.topics].sort()
  }

  async publish(
    topic: string,
    content: Content,
    options: PublishOptions = {},
  ): Promise<PublishResult> {
    if (this.#closed) throw new TypeError('publish: this agent is closed')
    const members = (options.members ?? []).map((m) => parseAgentId(m, 'options.members').id)
    return this.#p.publish(checkTopic(topic), content, { ...options, members })
  }

  group(topic: string): Group {
    checkTopic(topic)
    const publish = (t: string, c: Content, o: PublishOptions) => this.publish(t, c, o)
    const group = lazy(async () =>
      (await import('./topic-ops.js')).createGroup(this.#p.storage, topic, publish),
    )
    return {
      topic,
      members: async () => (await group()).members(),
      add: async (...agents) => (await group()).add(...agents),
      remove: async (...agents) => (await group()).remove(...agents),
      publish: async (content, o) => (await group()).publish(content, o),
    }
  }

  async reply(
    message: Message | ReceivedMessage,
    content: Content,
    options: Omit<SendOptions, 'conversationId'> = {},
  ): Promise<SendResult> {
    const r = message as ReceivedMessage
    const received = typeof r.transport === 'string' && 'message' in r && 'level' in r
    const m: Message = received ? r.message : (message as Message)
    await this.#p.conversations.seen(m.conversation_id, m.from.agent, m.sequence)
    return this.send(m.from.agent, content, {
      ...options,
      conversationId: m.conversation_id,
      phase: options.phase ?? 'response',
      relays: [...new Set([...(options.relays ?? []), ...(m.from.relays ?? [])])],
    })
  }

  on<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): () => void {
    return this.#p.events.on(event, listener)
  }

  off<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): void {
    this.#p.events.off(event, listener)
  }

  messages(): AsyncIterable<ReceivedMessage> {
    return this.#p.events.messages()
  }

  async introduce(token: string, options: IntroduceOptions = {}): Promise<string> {
    return (await this.#p.side()).keyStore.addIntroductionToken(token, options.agent)
  }

  rotateKey(): Promise<IdentityDocument> {
    return this.#p.keys.rotate()
  }

  revokeKey(fragment: string): Promise<IdentityDocument> {
    return this.#p.keys.revoke(fragment)
  }

  /**
   * Refuse new deliveries, let the messages being handled finish, then stop the transports.
   * Accepted messages not yet handled stay in storage for the next run, as do pending
   * deliveries in the outbox.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    const { events, transports } = this.#p
    // A receive side that never loaded has nothing to stop.
    const side = await this.#p.side().catch(() => undefined)
    await side?.receiver.close({ drain: false })
    events.close()
    // Listeners still running may reply: the transports stay open until they are done.
    await side?.idle()
    this.#closed = true
    ;(await this.#p.outbox()?.catch(() => undefined))?.close()
    await Promise.allSettled(transports.map((t) => t.close()))
  }
}
