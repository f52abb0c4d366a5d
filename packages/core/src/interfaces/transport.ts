import type { AgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity.js'
import type { Signer } from '../keys.js'
import type { KeyResolver } from '../resolver.js'
import type { Message } from '../types.js'
import type { AbortOptions } from './abort.js'
import type { Storage } from './storage.js'

/**
 * Where a message can be delivered. `inbox` (PROFILE §6) and `relay` (PROFILE §9) are the two
 * the protocol defines; a custom transport names its own kind (e.g. `memory`) and returns such
 * targets from {@link Transport.route}.
 */
export interface DeliveryTarget {
  /** `inbox`, `relay`, or a custom transport's own kind. */
  kind: string
  /** The recipient's agent id (`to.agent`, or the topic's publisher for topic messages). */
  agent: string
  /** The inbox URL (one), or the relay base URLs in the order to try; may be empty for custom kinds. */
  urls: readonly string[]
  /** `relay` targets: the recipient's `relay.preference` (PROFILE §9 failover). @default 'ordered' */
  preference?: 'any' | 'ordered'
}

/** What a transport reports after the peer accepted a message (202), or queued it durably. */
export interface DeliveryReceipt {
  /** The accepted message id as echoed by the peer. */
  messageId: string
  /** The target that was used. */
  target: DeliveryTarget
  /** The URL that answered 202 (the relay that took it, for relay targets). */
  url?: string
  /**
   * `true` when the first attempt failed retryably and the message waits in a durable outbox
   * (only with {@link TransportSendOptions.durable}); the transport reports the outcome later.
   */
  pending?: boolean
}

/** Options for {@link Transport.send}. */
export interface TransportSendOptions extends AbortOptions {
  /**
   * After a first attempt that failed retryably (network error, 5xx, 429), keep the message in
   * the transport's durable outbox and resolve with `pending: true` instead of rejecting
   * (PROFILE §6 retries). Transports without an outbox ignore it and reject.
   * @default false
   */
  durable?: boolean
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
 * transport moves signed messages; verification, replay protection and auth levels happen in
 * the receive pipeline above it, the same for every transport.
 */
export interface Transport {
  /** Protocol name, e.g. `https`, `relay` or a custom transport's. */
  readonly protocol: string
  /** The {@link DeliveryTarget.kind}s `send` accepts. */
  readonly kinds: readonly string[]
  /**
   * Targets this transport knows for `agent` by itself (e.g. an in-process hub), tried before
   * the agent's inbox and relays. Omit when the transport only serves `inbox`/`relay` targets.
   */
  route?(agent: string): Promise<DeliveryTarget | undefined>
  /** Deliver one signed message; resolves when the target answered 202 (or, `durable`, queued it). */
  send(
    message: Message,
    target: DeliveryTarget,
    options?: TransportSendOptions,
  ): Promise<DeliveryReceipt>
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
  /**
   * Report the outcome of a delivery the transport finished later (a `durable` send that was
   * still pending): delivered, or undeliverable with the reason.
   */
  onOutcome?(event: DeliveryEvent): void
}

/** A later outcome of a `durable` send. */
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
