import type { AgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity/document.js'
import type { Signer } from '../keys.js'
import type { KeyResolver } from '../resolver.js'
import type { Message } from '../types.js'
import type { AbortOptions, Storage } from './storage.js'

/** What an agent knows of a peer: each transport turns it into its {@link Transport.targets}. */
export interface PeerRoute {
  /** The peer's agent id. */
  agent: string
  /** Its identity document, when it is a URL agent and it was fetched. */
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
  /** The peer it reaches. */
  agent: string
  /** Where to send: an inbox, or relays. */
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
  /** The message's `message_id`. */
  messageId: string
  /** The target it went to. */
  target: DeliveryTarget
  /** The URL that accepted it (of the target's `urls`), when the transport knows. */
  url?: string
}

/** A message as a transport received it; the receive pipeline checks it, for every transport. */
export interface InboundDelivery {
  /** Raw JSON bytes, or the JSON value from an envelope. */
  body: Uint8Array | unknown
  /** The protocol of the transport that received it. */
  transport: string
  /** The HTTP `Idempotency-Key` (PROFILE §6). */
  idempotencyKey?: string | null
  /** The per-sender limit to charge instead of the receiver's: seconds to wait, 0 to go on. */
  perSender?: (from: string) => number
  /** The client-address bucket its id counts against (replay shares). */
  bucket?: string
}

/** The receiver's answer; a `refused` with `retry: true` is delivered again later. */
export type DeliveryOutcome =
  | { status: 'accepted'; messageId: string }
  | { status: 'duplicate'; messageId: string }
  | {
      /** Refused by a check of the pipeline. */
      status: 'refused'
      /** Why, with its wire code. */
      error: AgentMsgError
      /** Whether the same message may be accepted later (keep it). */
      retry: boolean
    }

/** The receive side, as transports see it: one call per inbound message. */
export type DeliveryHandler = (delivery: InboundDelivery) => Promise<DeliveryOutcome>

/** The contract transports implement; verification and levels are the receive pipeline's. */
export interface Transport {
  /** Its name in receipts and events: `https`, `relay`, or a custom one's. */
  readonly protocol: string
  /** Where this transport can deliver to `peer`, best first; none: `[]`. */
  targets?(peer: PeerRoute, options?: AbortOptions): DeliveryTarget[] | Promise<DeliveryTarget[]>
  /** Deliver once; a failure rejects with an `AgentMsgError` (the agent's outbox retries). */
  send(message: Message, target: DeliveryTarget, options?: AbortOptions): Promise<DeliveryReceipt>
  /** Start receiving: each inbound message goes to `receive`. */
  listen?(receive: DeliveryHandler, options?: AbortOptions): Promise<void>
  /** Have messages published to `topic` reach `listen` too (relays: PROFILE §9 pub/sub). */
  subscribe?(topic: string, options?: AbortOptions & { webhook?: string }): Promise<void>
  /** Stop `subscribe(topic)`. */
  unsubscribe?(topic: string, options?: AbortOptions): Promise<void>
  /** Stop listening and release connections. */
  close(): Promise<void>
}

/** What an agent gives each of its transports when it creates them. */
export interface TransportComponents {
  /** The agent's id. */
  readonly agentId: string
  /** Signs as the agent with its current key; for relay agent auth. */
  readonly signer: Signer
  /** The agent's key resolver. */
  readonly resolver: KeyResolver
  /** Its own state, namespaced per transport. */
  readonly storage: Storage
  /** The agent's relays (its `from.relays`). */
  readonly relays: readonly string[]
  /** Whether the agent trusts the relay at `url` with bodies (SPEC §5.7.2). */
  trusts(url: string): boolean
  /** The agent's own identity document (URL agents), as currently published. */
  identityDocument(): IdentityDocument | undefined
  /** The encryption schemes the receiver opens (PROFILE §8). @default none */
  readonly encryption?: readonly string[]
  /** The agent's clock, epoch ms. */
  now(): number
  /** Reports an error nobody awaits (the agent's `error` event). */
  onError(error: unknown): void
}

/** A later outcome of a send that was still pending (kept in the outbox). */
export type DeliveryEvent =
  | { type: 'delivered'; messageId: string; target: DeliveryTarget }
  | {
      /** Refused, or retries ran out. */
      type: 'undeliverable'
      /** The message's `message_id`. */
      messageId: string
      /** The target last tried. */
      target: DeliveryTarget
      /** Why, for the human. */
      reason: string
      /** The wire error code, when there was one. */
      code?: string
    }

/** Builds a transport for one agent: what `createAgent({ transports: [...] })` takes. */
export interface TransportFactory {
  /** The protocol of the transports it creates. */
  readonly protocol: string
  /** Creates the transport for one agent. */
  create(components: TransportComponents): Transport | Promise<Transport>
}
