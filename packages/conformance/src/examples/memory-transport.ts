/**
 * A transport between the agents of one process through a shared hub: message bytes to the
 * receiver's pipeline, its outcome back to the sender, as an inbox answers (`direct` model).
 */
import {
  type AbortOptions,
  AgentMsgError,
  type DeliveryHandler,
  type DeliveryReceipt,
  type DeliveryTarget,
  type Message,
  type PeerRoute,
  type Transport,
  type TransportComponents,
  type TransportFactory,
} from '@agentmsg/core'
import { invalidFormat } from '@agentmsg/core/http'

/** Where the agents of one process find each other: agent id → its receive side. */
type MemoryHub = { readonly agents: Map<string, DeliveryHandler> }

/** A hub for {@link memoryTransport}: agents sharing it can message each other. */
export const createMemoryHub = (): MemoryHub => ({ agents: new Map() })

const KIND = 'memory'

/**
 * A transport factory: each agent listens on the hub under its id, delivers to any agent there.
 * @example
 * const hub = createMemoryHub()
 * const alice = await createAgent({ transports: [memoryTransport(hub)] })
 */
export function memoryTransport(hub: MemoryHub): TransportFactory {
  return { protocol: KIND, create: (components) => new MemoryTransport(hub.agents, components) }
}

class MemoryTransport implements Transport {
  readonly protocol = KIND
  #receive: DeliveryHandler | undefined
  #closed = false

  constructor(
    private readonly agents: Map<string, DeliveryHandler>,
    private readonly components: TransportComponents,
  ) {}

  /** A target for an agent listening on the hub; nothing stands between them: `confidential`. */
  targets(peer: PeerRoute): DeliveryTarget[] {
    if (!this.agents.has(peer.agent)) return []
    return [{ kind: KIND, agent: peer.agent, urls: [], route: 'direct', confidential: true }]
  }

  async send(message: Message, target: DeliveryTarget, options: AbortOptions = {}) {
    if (this.#closed) throw new AgentMsgError('unavailable', 'the memory transport is closed')
    if (target.kind !== KIND) {
      throw invalidFormat(`the memory transport sends to ${KIND} targets`, 'target.kind')
    }
    options.signal?.throwIfAborted()
    const receive = this.agents.get(target.agent)
    if (!receive) throw new AgentMsgError('unavailable', `${target.agent} is not on this hub`)
    // Bytes, as on the wire: the receiver parses and checks them like an HTTP body.
    const body = new TextEncoder().encode(JSON.stringify(message))
    const outcome = await receive({ body, transport: KIND })
    if (outcome.status === 'refused') throw outcome.error
    return { messageId: outcome.messageId, target } satisfies DeliveryReceipt
  }

  async listen(receive: DeliveryHandler, options: AbortOptions = {}): Promise<void> {
    if (this.#closed) throw new AgentMsgError('unavailable', 'the memory transport is closed')
    options.signal?.throwIfAborted()
    this.#receive = receive
    this.agents.set(this.components.agentId, receive)
    options.signal?.addEventListener('abort', () => this.#leave(), { once: true })
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#leave()
  }

  /** Leave the hub, unless another transport of the same agent took the place since. */
  #leave(): void {
    const id = this.components.agentId
    if (this.#receive && this.agents.get(id) === this.#receive) this.agents.delete(id)
    this.#receive = undefined
  }
}
