/** The agents of one transport check, each with its transport and a recorder as its pipeline. */
import {
  type DeliveryOutcome,
  type DeliveryTarget,
  type InboundDelivery,
  type Message,
  memoryStorage,
  type Transport,
  type TransportComponents,
} from '@agentmsg/core'
import { describeError, invalidFormat, utf8Decode } from '@agentmsg/core/http'
import { createKeyResolver } from '@agentmsg/core/identity'
import { ok, show } from '../assert.js'
import { type FixtureAgent, fixtureAgent } from '../fixtures.js'
import type { TransportHarness } from './checks.js'

/** Decides the outcome for one delivery (default: accepted). */
export type Answer = (message: Message, count: number) => DeliveryOutcome

export function accept(m: Message): DeliveryOutcome {
  return { status: 'accepted', messageId: m.message_id }
}

/** An agent with one running transport. */
export class Peer {
  /** Everything delivered, across restarts; `listener`: 1 for the first transport, 2 after… */
  readonly received: Array<{ delivery: InboundDelivery; message: Message; listener: number }> = []
  #generation = 1

  constructor(
    readonly set: PeerSet,
    readonly agent: FixtureAgent,
    readonly components: TransportComponents,
    public transport: Transport,
  ) {}

  /** Start listening; `answer` picks each outcome. */
  async listen(answer: Answer = accept): Promise<void> {
    ok(typeof this.transport.listen === 'function', 'the transport cannot listen')
    const listener = this.#generation
    await this.transport.listen(async (delivery) => {
      let message: Message
      try {
        message = parseBody(delivery.body)
      } catch (err) {
        this.set.problems.push(err)
        return { status: 'refused', error: invalidFormat(describeError(err)), retry: false }
      }
      this.received.push({ delivery, message, listener })
      return answer(message, this.count(message.message_id))
    })
  }

  /** Close the transport and build a new one for the same agent and storage (not listening). */
  async restart(): Promise<void> {
    await this.close()
    this.transport = await this.set.harness.factory.create(this.components)
    this.#generation++
    this.set.open.add(this)
  }

  async close(): Promise<void> {
    if (this.set.open.delete(this)) await this.transport.close()
  }

  /** How many times the message with `id` was delivered. */
  count(id: string): number {
    return this.received.filter((r) => r.message.message_id === id).length
  }

  /** Wait until the message with `id` was delivered `times` times. */
  async waitFor(id: string, times = 1): Promise<void> {
    const end = Date.now() + (this.set.harness.timeoutMs ?? 10_000)
    while (this.count(id) < times) {
      if (Date.now() > end) {
        throw new Error(`message ${id} was delivered ${this.count(id)} time(s), expected ${times}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  /** The targets this peer's transport finds for `to`, from what the harness says of it. */
  async targets(to: Peer): Promise<DeliveryTarget[]> {
    const h = this.set.harness
    ok(typeof this.transport.targets === 'function', 'the transport has no targets()')
    const route = (await h.peer?.(to.agent.id)) ?? { agent: to.agent.id, relays: h.relays ?? [] }
    return this.transport.targets(route)
  }

  async target(to: Peer): Promise<DeliveryTarget> {
    const [first] = await this.targets(to)
    ok(first, `no target for ${to.agent.id}: give the harness a peer() the transport reads`)
    return first
  }
}

/** Builds the peers of one check and closes them all at the end. */
export class PeerSet {
  /** What the transports reported through `components.onError`. */
  readonly errors: unknown[] = []
  /** Deliveries the recorder could not read (not a message): each fails the check. */
  readonly problems: unknown[] = []
  readonly open = new Set<Peer>()

  constructor(readonly harness: TransportHarness) {}

  /** A new agent with its transport. */
  async peer(): Promise<Peer> {
    const agent = await fixtureAgent()
    const components: TransportComponents = {
      agentId: agent.id,
      signer: agent.signer,
      resolver: createKeyResolver(),
      storage: memoryStorage(),
      relays: this.harness.relays ?? [],
      trusts: () => false,
      identityDocument: () => undefined,
      now: () => Date.now(),
      onError: (error) => this.errors.push(error),
      ...this.harness.components?.(agent),
    }
    const peer = new Peer(this, agent, components, await this.harness.factory.create(components))
    this.open.add(peer)
    return peer
  }

  /** Close every transport still open. */
  async closeAll(): Promise<void> {
    for (const peer of [...this.open]) await peer.close()
  }
}

/** A delivery body as a message: bytes are parsed as JSON text. */
function parseBody(body: unknown): Message {
  const value: unknown = body instanceof Uint8Array ? JSON.parse(utf8Decode(body)) : body
  const id = (value as Partial<Message> | null)?.message_id
  ok(typeof id === 'string', `the delivered body is not a message: ${show(value)}`)
  return value as Message
}
