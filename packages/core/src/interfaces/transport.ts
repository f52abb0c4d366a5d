import type { AgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity/document.js'
import type { Signer } from '../keys.js'
import type { KeyResolver } from '../resolver.js'
import type { Message } from '../types.js'
import type { AbortOptions, Storage } from './storage.js'

/** What an agent knows of a peer: each transport turns it into its {@link Transport.targets}. */
export interface PeerRoute {
  agent: string
  document?: IdentityDocument | undefined
  /** Relays given to this send, then remembered ones; the document's come on top. */
  relays: readonly string[]
  /** The inbox to use instead of the document's (an error reply's, PROFILE §7). */
  inbox?: string | undefined
}

/** One place a transport can deliver a message for a peer. */
export interface DeliveryTarget {
  /** The transport's own name for it: `inbox`, `relay`, … */
  kind: string
  agent: string
  urls: readonly string[]
  /** `direct`: to the peer itself; `relay`: kept for it by intermediaries (PROFILE §9). */
  route: 'direct' | 'relay'
  /** Only the peer (or trusted intermediaries) reads it; else bodies are sealed (§8). @default false */
  confidential?: boolean
  /** A failure for now is retried by the agent's outbox (PROFILE §6). @default false */
  durable?: boolean
  /** The peer's `relay.preference` (PROFILE §9 failover). @default 'ordered' */
  preference?: 'any' | 'ordered'
}

/** What a transport reports after the peer (or a relay for it) accepted a message. */
export interface DeliveryReceipt {
  messageId: string
  target: DeliveryTarget
  url?: string
}

/** A message as a transport received it; the receive pipeline checks it, for every transport. */
export interface InboundDelivery {
  /** Raw JSON bytes, or the JSON value from an envelope. */
  body: Uint8Array | unknown
  transport: string
  /** The HTTP `Idempotency-Key` (PROFILE §6). */
  idempotencyKey?: string | null
  perSender?: (from: string) => number
  /** The client-address bucket its id counts against (replay shares). */
  bucket?: string
}

/** The receiver's answer; a `refused` with `retry: true` is delivered again later. */
export type DeliveryOutcome =
  | { status: 'accepted'; messageId: string }
  | { status: 'duplicate'; messageId: string }
  | {
      status: 'refused'
      error: AgentMsgError
      retry: boolean
    }

/** The receive side, as transports see it: one call per inbound message. */
export type DeliveryHandler = (delivery: InboundDelivery) => Promise<DeliveryOutcome>

/** The contract transports implement; verification and levels are the receive pipeline's. */
export interface Transport {
  readonly protocol: string
  /** Where this transport can deliver to `peer`, best first; none: `[]`. */
  targets?(peer: PeerRoute, options?: AbortOptions): DeliveryTarget[] | Promise<DeliveryTarget[]>
  /** Deliver once; a failure rejects with an `AgentMsgError` (the agent's outbox retries). */
  send(message: Message, target: DeliveryTarget, options?: AbortOptions): Promise<DeliveryReceipt>
  /** Start receiving: each inbound message goes to `receive`. */
  listen?(receive: DeliveryHandler, options?: AbortOptions): Promise<void>
  close(): Promise<void>
}

/** What an agent gives each of its transports when it creates them. */
export interface TransportComponents {
  readonly agentId: string
  /** Signs as the agent with its current key; for relay agent auth. */
  readonly signer: Signer
  readonly resolver: KeyResolver
  /** Its own state, namespaced per transport. */
  readonly storage: Storage
  /** The agent's relays (its `from.relays`). */
  readonly relays: readonly string[]
  /** Whether the agent trusts the relay at `url` with bodies (SPEC §5.7.2). */
  trusts(url: string): boolean
  identityDocument(): IdentityDocument | undefined
  /** The encryption schemes the receiver opens (PROFILE §8). @default none */
  readonly encryption?: readonly string[]
  now(): number
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
