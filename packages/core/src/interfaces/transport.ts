import type { AgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity/document.js'
import type { Signer } from '../keys.js'
import type { KeyResolver } from '../resolver.js'
import type { Message } from '../types.js'
import type { AbortOptions } from './abort.js'
import type { Storage } from './storage.js'

/** What an agent knows of a peer: each transport turns it into its {@link Transport.targets}. */
export interface PeerRoute {
  agent: string
  /** Its identity document (a URL agent's, PROFILE §4), when it could be fetched. */
  document?: IdentityDocument | undefined
  /** Relays given to this send, then the ones remembered for the peer; the document's come on top. */
  relays: readonly string[]
  /** The inbox to use instead of the document's (an error reply's, PROFILE §7). */
  inbox?: string | undefined
}

/** One place a transport can deliver a message for a peer. */
export interface DeliveryTarget {
  /** The transport's own name for this kind of target: `inbox`, `relay`, `memory`, … */
  kind: string
  agent: string
  /** The URLs behind it, in the order to try; may be empty. */
  urls: readonly string[]
  /** `direct`: to the peer itself; `relay`: kept for it by intermediaries (PROFILE §9). */
  route: 'direct' | 'relay'
  /**
   * Only the peer (or intermediaries trusted with bodies) can read what goes here; a body sent
   * anywhere else is sealed by default (PROFILE §8). @default false
   */
  confidential?: boolean
  /** A failure for now is retried on PROFILE §6's schedule by the agent's outbox. @default false */
  durable?: boolean
  /** The peer's `relay.preference` (PROFILE §9 failover). @default 'ordered' */
  preference?: 'any' | 'ordered'
}

/** What a transport reports after the peer (or a relay for it) accepted a message. */
export interface DeliveryReceipt {
  messageId: string
  target: DeliveryTarget
  /** The URL that answered 202. */
  url?: string
}

/** A message as a transport received it; the receive pipeline checks it, for every transport. */
export interface InboundDelivery {
  /** The raw JSON bytes, or the JSON value taken from an envelope (relay page, SSE, WebSocket). */
  body: Uint8Array | unknown
  /** Its {@link Transport.protocol}. */
  transport: string
  /** The HTTP `Idempotency-Key` (PROFILE §6). */
  idempotencyKey?: string | null
  /** An inbox's per-sender limit (PROFILE §6): seconds to wait, 0 to go on. */
  perSender?: (from: string) => number
  /** The client-address bucket it came from: its id counts against that bucket's replay share. */
  bucket?: string
}

/**
 * What the receiver answered for one delivery: an inbox answers 202 or the error's status; a
 * relay stream acknowledges all but a `refused` with `retry: true`, delivered again later.
 */
export type DeliveryOutcome =
  | { status: 'accepted'; messageId: string }
  | { status: 'duplicate'; messageId: string }
  | {
      status: 'refused'
      error: AgentMsgError
      /** The refusal is for now (`error.shouldRetry()`): deliver it again later. */
      retry: boolean
    }

/** The receive side, as transports see it: one call per inbound message. */
export type DeliveryHandler = (delivery: InboundDelivery) => Promise<DeliveryOutcome>

/**
 * The contract transports implement (transport-https, transport-relay, or your own): find the
 * targets for a peer and move signed messages to them. Verification, replay protection and
 * levels happen in the receive pipeline above, the same for every transport.
 */
export interface Transport {
  readonly protocol: string
  /** Where this transport can deliver to `peer`, best first; none: `[]`. */
  targets?(peer: PeerRoute, options?: AbortOptions): DeliveryTarget[] | Promise<DeliveryTarget[]>
  /**
   * Deliver one signed message once, resolving when the target accepted it. A failure rejects
   * with an `AgentMsgError` (`shouldRetry()`, `retryAfter`); the agent's outbox retries.
   */
  send(message: Message, target: DeliveryTarget, options?: AbortOptions): Promise<DeliveryReceipt>
  /** Start receiving: each inbound message goes to `receive`, the outcome is the transport's to act on. */
  listen?(receive: DeliveryHandler, options?: AbortOptions): Promise<void>
  close(): Promise<void>
}

/** What an agent gives each of its transports when it creates them. */
export interface TransportComponents {
  readonly agentId: string
  /** Signs as the agent with its current key (follows rotations); for relay agent auth. */
  readonly signer: Signer
  readonly resolver: KeyResolver
  /** The transport's own state (cursors, subscriptions), namespaced per transport. */
  readonly storage: Storage
  /** The agent's relays (its `from.relays`). */
  readonly relays: readonly string[]
  /** Whether the agent trusts the relay at `url` with bodies (SPEC §5.7.2): else not `confidential`. */
  trusts(url: string): boolean
  /** The agent's identity document (URL agents), current at each call. */
  identityDocument(): IdentityDocument | undefined
  /** The encryption schemes the receiver opens (PROFILE §8), advertised by an inbox. @default none */
  readonly encryption?: readonly string[]
  now(): number
  /** Failures nobody else sees. */
  onError(error: unknown): void
}

/** A later outcome of a send that was still pending (kept in the outbox). */
export type DeliveryEvent =
  | { type: 'delivered'; messageId: string; target: DeliveryTarget }
  | {
      type: 'undeliverable'
      messageId: string
      target: DeliveryTarget
      reason: string
      code?: string
    }

/** Builds a transport for one agent: what `createAgent({ transports: [...] })` takes. */
export interface TransportFactory {
  readonly protocol: string
  create(components: TransportComponents): Transport | Promise<Transport>
}
