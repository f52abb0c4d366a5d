/**
 * Routing: where a message for an agent can go, in the order to try, and the tries.
 *
 * Targets (PROFILE §4, §9): what the transports know by themselves (`route()`), then the inbox
 * of a URL agent (from its identity document, else the well-known one), then its relays — the
 * ones given, the document's `relay.urls`, those remembered from its verified `from.relays`.
 * A retryable failure (network error, 5xx, 429) falls back to the next target; a refusal ends
 * the send. The inbox is tried `durable` (kept in the https outbox) only when nothing comes
 * after it; when what came after refused too, the message goes back to the inbox `durable`.
 */
import {
  AgentMsgError,
  agentEndpoints,
  type DeliveryReceipt,
  type DeliveryTarget,
  type IdentityDocument,
  isAgentMsgError,
  type Message,
  parseAgentId,
  type Transport,
} from '@agentmsg/core'
import type { Documents } from './documents.js'
import type { PeerRelays } from './peers.js'

/** What to route: the recipient and what the caller knows about it. */
export interface RouteRequest {
  to: string
  /** `direct`: no relays; `relay`: relays only; `auto`: everything. */
  route: 'direct' | 'relay' | 'auto'
  /** Relays known for `to` out of band (tried first among its relays). */
  relays?: readonly string[]
  /** The inbox to use instead of the document's (error replies, PROFILE §7). */
  inbox?: string
}

/** A target and the transport that sends to it. */
export interface PlannedTarget {
  target: DeliveryTarget
  transport: Transport
}

/** What a successful delivery reports. */
export interface Delivered {
  receipt: DeliveryReceipt
  transport: Transport
}

export interface RouterOptions {
  transports: readonly Transport[]
  documents: Pick<Documents, 'document'>
  peers: PeerRelays
  /** Relays as a fallback after direct targets (`route: 'auto'`). */
  fallbackToRelay: boolean
  /** A later target's failure after which the message went back to the inbox's outbox. */
  onError: (error: unknown) => void
}

/**
 * Whether another target may succeed where this one failed: a network error, a 5xx or a 429
 * (the peer's answer when there was one, else the error's own status).
 */
function isRetryable(error: unknown): boolean {
  if (!isAgentMsgError(error)) return true
  const peerStatus = (error as { peerStatus?: unknown }).peerStatus
  const status = typeof peerStatus === 'number' ? peerStatus : error.status
  return status >= 500 || status === 429
}

export class Router {
  readonly #o: RouterOptions

  constructor(options: RouterOptions) {
    this.#o = options
  }

  /** The targets for `request.to`, in the order to try. */
  async plan(request: RouteRequest): Promise<PlannedTarget[]> {
    const { to, route } = request
    const out: PlannedTarget[] = []
    if (route !== 'relay') {
      for (const transport of this.#o.transports) {
        const target = await transport.route?.(to)
        if (target) out.push({ target, transport })
      }
    }
    const doc = await this.#document(to)
    const inboxTransport = this.#transportFor('inbox')
    if (route !== 'relay' && inboxTransport && (request.inbox || isUrlAgent(to))) {
      const inbox = request.inbox ?? doc?.endpoints.inbox ?? agentEndpoints(to).inbox
      out.push({ target: { kind: 'inbox', agent: to, urls: [inbox] }, transport: inboxTransport })
    }
    const relayTransport = this.#transportFor('relay')
    const wantRelays =
      route === 'relay' || (route === 'auto' && (this.#o.fallbackToRelay || out.length === 0))
    if (wantRelays && relayTransport) {
      const relays = [
        ...new Set([
          ...(request.relays ?? []),
          ...(doc?.relay?.urls ?? []),
          ...(await this.#o.peers.of(to)),
        ]),
      ]
      if (relays.length > 0) {
        // A document's relays are equivalent unless it says otherwise; relays learned
        // elsewhere are tried in the order known (PROFILE §9 failover).
        const preference = doc ? (doc.relay?.preference ?? 'any') : 'ordered'
        const target: DeliveryTarget = { kind: 'relay', agent: to, urls: relays, preference }
        out.push({ target, transport: relayTransport })
      }
    }
    if (out.length === 0) throw noRoute(to, route)
    return out
  }

  /**
   * Try `targets` in order; `copy` gives the message to send to each (a relay copy may carry
   * more signatures, PROFILE §9). `bestEffort` (error phase messages, which a stranger can
   * trigger): no durable outbox entry and no report of the failures on the way, so nobody can
   * park retries in our outbox or put their network's detail into our logs (PROFILE §4, §7).
   */
  async deliver(
    targets: readonly PlannedTarget[],
    copy: (target: DeliveryTarget) => Promise<Message>,
    signal?: AbortSignal,
    bestEffort = false,
  ): Promise<Delivered> {
    let inboxTried: PlannedTarget | undefined
    for (let i = 0; i < targets.length; i++) {
      const { target, transport } = targets[i]!
      const last = i === targets.length - 1
      try {
        const receipt = await transport.send(await copy(target), target, {
          durable: last && !bestEffort,
          ...(signal ? { signal } : {}),
        })
        return { receipt, transport }
      } catch (error) {
        if (signal?.aborted) throw error
        if (!last && isRetryable(error)) {
          if (target.kind === 'inbox') inboxTried ??= targets[i]
          continue
        }
        if (!inboxTried || bestEffort) throw error
        // Nothing after the inbox took it: back to the inbox, kept in its outbox for retries.
        this.#o.onError(error)
        const receipt = await inboxTried.transport.send(
          await copy(inboxTried.target),
          inboxTried.target,
          { durable: true, ...(signal ? { signal } : {}) },
        )
        return { receipt, transport: inboxTried.transport }
      }
    }
    throw new AgentMsgError('not_found', 'no delivery target')
  }

  #transportFor(kind: string): Transport | undefined {
    return this.#o.transports.find((t) => t.kinds.includes(kind))
  }

  /** A URL agent's identity document, when it can be had now. */
  async #document(agent: string): Promise<IdentityDocument | undefined> {
    if (!isUrlAgent(agent)) return undefined
    const doc = await this.#o.documents.document(agent).catch(() => undefined)
    return doc && !('status' in doc) ? doc : undefined
  }
}

function isUrlAgent(agent: string): boolean {
  return parseAgentId(agent, 'to').kind === 'url'
}

function noRoute(to: string, route: RouteRequest['route']): AgentMsgError {
  return route === 'direct'
    ? new AgentMsgError('not_found', `${to} has no inbox to deliver to directly`)
    : new AgentMsgError(
        'not_found',
        `no route to ${to}: it has no inbox (not a URL agent) and no relay is known; ` +
          'pass options.relays, pin it with relays, or wait for a message from it',
      )
}
