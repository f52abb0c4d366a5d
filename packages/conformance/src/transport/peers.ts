/**
 * The agents of one transport check: each a fresh did:key agent with its own transport from
 * the harness's factory, and a recorder standing in for the receive pipeline (it answers what
 * the check asks for).
 */
import {
  createKeyResolver,
  type DeliveryOutcome,
  type DeliveryTarget,
  type InboundDelivery,
  type Message,
  memoryStorage,
  type Transport,
  type TransportComponents,
} from '@agentmsg/core'
import { utf8Decode } from '@agentmsg/core/encoding'
import { invalidFormat } from '@agentmsg/core/http'
import { describeError, ok, show } from '../assert.js'
import { type FixtureAgent, fixtureAgent } from '../fixtures.js'
import type { TransportHarness } from './suite.js'

/** One delivery as the recorder saw it. */
export interface RecordedDelivery {
  delivery: InboundDelivery
  /** The delivered message, parsed when the body was bytes. */
  message: Message
  /** Which of the peer's transports delivered it: 1 for the first, 2 after a restart, … */
  listener: number
}

/** Decides the outcome for one delivery (default: accepted). */
export type Answer = (message: Message, count: number) => DeliveryOutcome

/** An agent with one running transport. */
export interface Peer {
  agent: FixtureAgent
  transport: Transport
  /** Everything delivered to this peer's listeners, across restarts. */
  received: RecordedDelivery[]
  /** Start listening; `answer` picks each outcome. */
  listen(answer?: Answer): Promise<void>
  /** Close the transport and build a new one for the same agent and storage (not listening). */
  restart(): Promise<void>
  close(): Promise<void>
  /** How many times the message with `id` was delivered. */
  count(id: string): number
  /** Wait until the message with `id` was delivered `times` times. */
  waitFor(id: string, times?: number): Promise<void>
  /** The targets this peer's transport finds for `to`. */
  targets(to: Peer): Promise<DeliveryTarget[]>
  /** The first of them. */
  target(to: Peer): Promise<DeliveryTarget>
}

/** Builds the peers of one check and closes them all at the end. */
export class PeerSet {
  /** What the transports reported through `components.onError`. */
  readonly errors: unknown[] = []
  /** Deliveries the recorder could not read (a body that is not a message): each fails the check. */
  readonly problems: unknown[] = []
  readonly #open = new Set<Peer>()

  constructor(readonly harness: TransportHarness) {}

  /** A new agent with its transport. */
  async peer(): Promise<Peer> {
    const h = this.harness
    const open = this.#open
    const problems = this.problems
    const agent = await fixtureAgent()
    const components: TransportComponents = {
      agentId: agent.id,
      signer: agent.signer,
      resolver: createKeyResolver(),
      storage: memoryStorage(),
      relays: h.relays ?? [],
      trusts: () => false,
      identityDocument: () => undefined,
      now: () => Date.now(),
      onError: (error) => this.errors.push(error),
      ...h.components?.(agent),
    }
    const received: RecordedDelivery[] = []
    let answer: Answer = accept
    let transport = await h.factory.create(components)
    let closed = false
    let generation = 1
    const count = (id: string): number => received.filter((r) => r.message.message_id === id).length
    const peer: Peer = {
      agent,
      get transport() {
        return transport
      },
      received,
      async listen(next = accept) {
        answer = next
        ok(typeof transport.listen === 'function', 'the transport cannot listen')
        const listener = generation
        await transport.listen(async (delivery) => {
          let message: Message
          try {
            message = parseBody(delivery.body)
          } catch (err) {
            problems.push(err)
            return { status: 'refused', error: invalidFormat(describeError(err)), retry: false }
          }
          received.push({ delivery, message, listener })
          return answer(message, count(message.message_id))
        })
      },
      async restart() {
        await peer.close()
        transport = await h.factory.create(components)
        closed = false
        generation++
        open.add(peer)
      },
      async close() {
        if (closed) return
        closed = true
        open.delete(peer)
        await transport.close()
      },
      count,
      async waitFor(id, times = 1) {
        const end = Date.now() + (h.timeoutMs ?? 10_000)
        while (count(id) < times) {
          if (Date.now() > end) {
            throw new Error(`message ${id} was delivered ${count(id)} time(s), expected ${times}`)
          }
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
      },
      async targets(to) {
        ok(typeof transport.targets === 'function', 'the transport has no targets()')
        const route = (await h.peer?.(to.agent.id)) ?? {
          agent: to.agent.id,
          relays: h.relays ?? [],
        }
        return transport.targets(route)
      },
      async target(to) {
        const [first] = await peer.targets(to)
        ok(first, `no target for ${to.agent.id}: give the harness a peer() the transport reads`)
        return first
      },
    }
    open.add(peer)
    return peer
  }

  /** Close every transport still open. */
  async closeAll(): Promise<void> {
    for (const peer of [...this.#open]) await peer.close()
  }
}

/** The default answer: accepted. */
export function accept(message: Message): DeliveryOutcome {
  return { status: 'accepted', messageId: message.message_id }
}

/** A delivery body as a message: bytes are parsed as JSON text. */
function parseBody(body: unknown): Message {
  const value: unknown = body instanceof Uint8Array ? JSON.parse(utf8Decode(body)) : body
  ok(
    typeof value === 'object' &&
      value !== null &&
      typeof (value as Message).message_id === 'string',
    `the delivered body is not a message: ${show(value)}`,
  )
  return value as Message
}
