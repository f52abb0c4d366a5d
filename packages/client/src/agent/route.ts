/**
 * Routing: what the agent knows of the peer (its identity document, the relays given and
 * remembered) put together once, each transport's targets for it (PROFILE §4, §9), direct ones
 * first; and one round of tries, which a refusal by the peer ends.
 */
import {
  AgentMsgError,
  type DeliveryReceipt,
  type DeliveryTarget,
  isAgentMsgError,
  type Message,
  type PeerRoute,
  parseAgentId,
  type Transport,
} from '@agentmsg/core'
import { type TraceSpan, traced } from '@agentmsg/core/http'
import type { OutboxEntry } from './outbox.js'
import type { SendContext } from './send.js'

/**
 * What to route: the recipient, `direct` (targets to the peer itself), `relay` or `auto` (both),
 * relays known out of band (before the remembered ones), an inbox to use (error replies, §7).
 */
export interface RouteRequest {
  to: string
  route: 'direct' | 'relay' | 'auto'
  relays?: readonly string[]
  inbox?: string
}

/** A target and the transport that sends to it. */
export interface PlannedTarget {
  target: DeliveryTarget
  transport: Transport
}

/**
 * What one round of tries came to. A failure: the refusal that ended it, else the last failure;
 * `retry` when a durable target failed for now, `retryAfterMs` the longest `Retry-After` of
 * those failures (the next round not before, PROFILE §6).
 */
export type Round =
  | { ok: true; receipt: DeliveryReceipt; transport: string }
  | { ok: false; error: unknown; retry: boolean; retryAfterMs?: number }

/**
 * A refusal by the peer: it answered, and not "for now" (PROFILE §6). It ends a delivery; any
 * other failure (network, 5xx, 429, a refused address) moves on to the next target or relay.
 */
export function isRefusal(error: unknown): boolean {
  return isAgentMsgError(error) && error.peerStatus !== undefined && !error.shouldRetry()
}

/** Whether the same delivery may pass later (PROFILE §6): never a 429 that gave no Retry-After. */
function passesLater(error: unknown): boolean {
  if (!isAgentMsgError(error)) return true
  return error.shouldRetry() && !(error.status === 429 && error.retryAfter === undefined)
}

/** The targets for `request.to`, in the order to try. */
export async function planRoute(c: SendContext, request: RouteRequest): Promise<PlannedTarget[]> {
  const { to, route } = request
  const peer: PeerRoute = {
    agent: to,
    document: await documentOf(c, to),
    relays: [...new Set([...(request.relays ?? []), ...(await c.peers.of(to))])],
    inbox: request.inbox,
  }
  const direct: PlannedTarget[] = []
  const relayed: PlannedTarget[] = []
  for (const transport of c.transports) {
    for (const target of (await transport.targets?.(peer)) ?? []) {
      ;(target.route === 'relay' ? relayed : direct).push({ target, transport })
    }
  }
  const wantRelays =
    route === 'relay' || (route === 'auto' && (c.fallbackToRelay || direct.length === 0))
  const out = [...(route === 'relay' ? [] : direct), ...(wantRelays ? relayed : [])]
  if (out.length === 0) throw noRoute(to, route)
  return out
}

/** A URL agent's identity document, when it can be had now. */
export async function documentOf(c: SendContext, agent: string) {
  if (parseAgentId(agent, 'to').kind !== 'url') return undefined
  const doc = await c.documents.document(agent).catch(() => undefined)
  return doc && !('status' in doc) ? doc : undefined
}

/**
 * Try `targets` in order, each once, with the copy `copy` gives for it, until one takes the
 * message or a peer refuses it.
 */
export async function tryTargets(
  targets: readonly PlannedTarget[],
  copy: (target: DeliveryTarget, index: number) => Promise<Message>,
  signal?: AbortSignal,
): Promise<Round> {
  let last: unknown = new AgentMsgError('not_found', 'no delivery target')
  let retry = false
  let retryAfterMs: number | undefined
  for (const [i, { target, transport }] of targets.entries()) {
    try {
      const out = { target, transport, message: await copy(target, i) }
      const receipt = await traced('agentmsg.deliver', 'CLIENT', undefined, attempt, out, signal)
      return { ok: true, receipt, transport: transport.protocol }
    } catch (error) {
      if (signal?.aborted) throw error
      if (isRefusal(error)) return { ok: false, error, retry: false }
      last = error
      if (target.durable && passesLater(error)) {
        retry = true
        const after = isAgentMsgError(error) ? error.retryAfter : undefined
        if (after !== undefined) retryAfterMs = Math.max(retryAfterMs ?? 0, after * 1000)
      }
    }
  }
  return { ok: false, error: last, retry, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }
}

/** One try of one target, in its span (`traced` records a failure, whose message names the URL). */
async function attempt(
  span: TraceSpan | undefined,
  { target, transport, message }: PlannedTarget & { message: Message },
  signal: AbortSignal | undefined,
): Promise<DeliveryReceipt> {
  span?.setAttributes({ 'agentmsg.route': target.route })
  return transport.send(message, target, signal ? { signal } : {})
}

/** One round over a stored entry's targets, with the transports this agent has. */
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

function noRoute(to: string, route: RouteRequest['route']): AgentMsgError {
  return route === 'direct'
    ? new AgentMsgError('not_found', `${to} has no target to deliver to directly`)
    : new AgentMsgError(
        'not_found',
        `no route to ${to}: no transport has a target for it (a did:key has no inbox) and no ` +
          'relay is known; pass options.relays, pin it with relays, or wait for a message from it',
      )
}
