import type { Message } from '../types.js'
import type { AbortOptions } from './abort.js'

/** Where a message should go: an inbox URL, or a relay (with the recipient's mailbox id). */
export type DeliveryTarget =
  | { kind: 'inbox'; url: string }
  | { kind: 'relay'; relayUrl: string }

/** What a transport reports after the peer accepted a message (202). */
export interface DeliveryReceipt {
  /** The accepted message id as echoed by the peer. */
  messageId: string
  /** The target that accepted it. */
  target: DeliveryTarget
}

/** A message that arrived through a transport, before the receive pipeline verified it. */
export interface InboundDelivery {
  /** The message as received. */
  message: Message
  /** Which transport delivered it, e.g. `https` or `relay`. */
  transport: string
  /** For relay deliveries, the cursor to resume after this message. */
  cursor?: string
  /** Acknowledge the message (relay deliveries); call only after it was handled. */
  ack?(options?: AbortOptions): Promise<void>
}

/**
 * The contract transports implement (transport-https, transport-relay, or your own). A
 * transport moves signed messages; verification, replay protection and auth levels happen in
 * the receive pipeline above it, the same for every transport.
 */
export interface Transport {
  /** Protocol name, e.g. `https` or `relay`. */
  readonly protocol: string
  /** Deliver one signed message; resolves when the target answered 202. */
  send(message: Message, target: DeliveryTarget, options?: AbortOptions): Promise<DeliveryReceipt>
  /** Start receiving; the handler's promise settling means the message was handled. */
  listen?(handler: (delivery: InboundDelivery) => Promise<void>, options?: AbortOptions): Promise<void>
  /** Stop sending and receiving and release resources. */
  close(): Promise<void>
}

/** Builds a transport from shared components, so a client can be configured by protocol name. */
export interface TransportFactory<C = unknown> {
  readonly protocol: string
  create(components: C): Transport
}
