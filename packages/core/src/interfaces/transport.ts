import type { AgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity/document.js'
import type { Signer } from '../keys.js'
import type { KeyResolver } from '../resolver.js'
import type { Message } from '../types.js'
import type { AbortOptions } from './abort.js'
import type { Storage } from './storage.js'

/**
 * What an agent knows of a peer when it routes a message to it: each transport turns this into
 * the targets it can deliver to ({@link Transport.targets}).
 */
export interface PeerRoute {
  /** The peer's agent id. */
  agent: string
  /** Its identity document (a URL agent's, PROFILE §4), when it could be fetched. */
  document?: IdentityDocument | undefined
  /**
   * Relays it can be reached through, in the order known: given to this send, pinned with the
   * contact, learned from its verified `from.relays` (PROFILE §9). The document's come on top.
   */
  relays: readonly string[]
  /** The inbox to use instead of the document's: an error reply goes to the one its sender's document names (PROFILE §7). */
  inbox?: string | undefined
}

/** One place a transport can deliver a message for a peer. */
export interface DeliveryTarget {
  /** The transport's own name for this kind of target: `inbox`, `relay`, `memory`, … */
  kind: string
  /** The recipient's agent id (`to.agent`, or the topic's publisher for topic messages). */
  agent: string
  /** The URLs behind it, in the order to try (an inbox's one, a peer's relays); may be empty. */
  urls: readonly string[]
  /** `direct`: to the peer itself; `relay`: kept for the peer by intermediaries that verify it (PROFILE §9). */
  route: 'direct' | 'relay'
  /**
   * Only the peer can read what goes to this target (TLS to the peer itself, or intermediaries
   * the agent trusts with bodies). A body sent anywhere else is sealed by default (PROFILE §8).
   * @default false
   */
  confidential?: boolean
  /**
   * A delivery that failed for now is kept and retried on PROFILE §6's schedule (the agent's
   * durable outbox), rather than reported at once. @default false
   */
  durable?: boolean
  /** `relay` targets: the peer's `relay.preference` (PROFILE §9 failover). @default 'ordered' */
  preference?: 'any' | 'ordered'
}

/** What a transport reports after the peer (or a relay for it) accepted a message. */
export interface DeliveryReceipt {
  /** The accepted message id as echoed by the peer. */
  messageId: string
  /** The target that was used. */
  target: DeliveryTarget
  /** The URL that answered 202 (the relay that took it, for relay targets). */
  url?: string
}

/**
 * A message as a transport received it, before anything was checked: the receive pipeline
 * (`receive` / `createReceiver`) parses, validates and verifies it, the same for every
 * transport.
 */
export interface InboundDelivery {
  /** The raw JSON bytes (an HTTP body), or the JSON value taken from an envelope (relay page, SSE event, WebSocket frame). */
  body: Uint8Array | unknown
  /** Which transport delivered it: its {@link Transport.protocol}. */
  transport: string
  /** The HTTP `Idempotency-Key`, when the transport has one (PROFILE §6). */
  idempotencyKey?: string | null
  /**
   * The transport's per-sender limit (an inbox's, PROFILE §6): seconds to wait, 0 to go on.
   * The pipeline charges it only for verified new messages, after the duplicate check.
   */
  perSender?: (from: string) => number
  /**
   * The client-address bucket it came from (an inbox's, PROFILE §6), when the transport has
   * one: its id counts against that bucket's share of the replay guard, so a few addresses
   * cannot fill it for everyone.
   */
  bucket?: string
}

/**
 * What the receiver answered for one delivery. A transport maps it onto its own protocol: an
 * inbox answers 202 for `accepted` and `duplicate` and the error's status for `refused`; a
 * relay stream acknowledges `accepted`, `duplicate` and permanent refusals, and leaves a
 * `refused` with `retry: true` in the mailbox to be delivered again.
 */
export type DeliveryOutcome =
  | { status: 'accepted'; messageId: string }
  | { status: 'duplicate'; messageId: string }
  | {
      status: 'refused'
      error: AgentMsgError
      /** The refusal is for now (`unavailable`, `rate_limited`): deliver it again later. */
      retry: boolean
    }

/** The receive side, as transports see it: one call per inbound message. */
export type DeliveryHandler = (delivery: InboundDelivery) => Promise<DeliveryOutcome>

/**
 * The contract transports implement (transport-https, transport-relay, or your own). A
 * transport finds its targets for a peer and moves signed messages to them; verification,
 * replay protection and auth levels happen in the receive pipeline above it, the same for
 * every transport.
 */
export interface Transport {
  /** Protocol name, e.g. `https`, `relay` or a custom transport's. */
  readonly protocol: string
  /**
   * Where this transport can deliver to `peer`, best first: from its identity document (an
   * endpoint the transport knows), its relays, or what the transport knows by itself. None: `[]`.
   */
  targets?(peer: PeerRoute, options?: AbortOptions): DeliveryTarget[] | Promise<DeliveryTarget[]>
  /**
   * Deliver one signed message once; resolves when the target accepted it (202). A failure
   * rejects with an `AgentMsgError` whose `shouldRetry()` says whether it may pass (a network
   * error, 5xx, 429) and whose `retryAfter` says when; the agent's outbox does the retrying.
   */
  send(message: Message, target: DeliveryTarget, options?: AbortOptions): Promise<DeliveryReceipt>
  /**
   * Start receiving and resolve once started. Each inbound message goes to `receive`, one call
   * per message; what to do with the outcome is the transport's (see {@link DeliveryOutcome}).
   */
  listen?(receive: DeliveryHandler, options?: AbortOptions): Promise<void>
  /** Stop sending and receiving and release resources. */
  close(): Promise<void>
}

/** What an agent gives each of its transports when it creates them. */
export interface TransportComponents {
  /** The agent's own id. */
  readonly agentId: string
  /** Signs as the agent with its current key (follows rotations); for relay agent auth. */
  readonly signer: Signer
  /** The agent's key resolver (documents, did:key, pinned and introduced keys). */
  readonly resolver: KeyResolver
  /** Storage for the transport's own state (cursors, subscriptions, outbox), namespaced per transport. */
  readonly storage: Storage
  /** The agent's relays (its `from.relays`). */
  readonly relays: readonly string[]
  /**
   * Whether the agent trusts the intermediary at `url` (a relay) with message bodies (SPEC
   * §5.7.2): a target through intermediaries it does not trust is not `confidential`.
   */
  trusts(url: string): boolean
  /** The agent's identity document (URL agents), current at each call. */
  identityDocument(): IdentityDocument | undefined
  /**
   * The encryption schemes the agent's receive pipeline opens (`sealed_box`, PROFILE §8): what
   * an inbox advertises in its capabilities document (PROFILE §10). @default none
   */
  readonly encryption?: readonly string[]
  /** The clock, epoch ms. */
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

/**
 * Builds a transport for one agent. `createAgent({ transports: [...] })` takes these; the
 * defaults are `httpsTransport()` (sends to inboxes) and `relayTransport()` (publishes to
 * relays, listens on the agent's own).
 */
export interface TransportFactory {
  readonly protocol: string
  create(components: TransportComponents): Transport | Promise<Transport>
}
