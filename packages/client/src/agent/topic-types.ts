/** The public types of topics and groups (./topics.ts, ./publish.ts). */
import type { Phase } from '@agentmsg/core'
import type { Content } from './types.js'

/** Options for `Agent.subscribe`. */
export interface SubscribeOptions {
  /**
   * Have the relays push the topic's messages to this URL (an inbox of this agent's, which
   * answers the relay's `webhook_verify`) instead of the agent's mailbox stream (PROFILE §9).
   */
  webhook?: string
}

/** Options for `Agent.publish`. */
export interface PublishOptions {
  /**
   * The agents who can open it: the body is sealed for each (and for the publisher). Who is a
   * member is the caller's list; it decides who can open this message, not ones already sent.
   */
  members?: string[]
  /** Publish in plaintext when there are no members (the relay and every subscriber read it). */
  allowPlaintext?: boolean
  /** @default one conversation per topic, the same for every publisher */
  conversationId?: string
  /** @default 'update' */
  phase?: Phase
  /** `ttl_seconds`: it expires that long after it was written. */
  ttlSeconds?: number
  /** Abort the publish; the promise rejects with the signal's reason. */
  signal?: AbortSignal
}

/** What `Agent.publish` resolved with. */
export interface PublishResult {
  /** The message's `message_id`. */
  messageId: string
  /** Its conversation. */
  conversationId: string
  /** The topic. */
  topic: string
  /** The agents it was sealed for (the members and the publisher); empty when plaintext. */
  sealedFor: string[]
  /** The relay that stored it. */
  relayUrl?: string
  /** No relay took it now: kept in the outbox and retried (PROFILE §6). */
  pending?: boolean
}

/** A named member list kept in storage, publishing to its topic sealed for its members. */
export interface Group {
  /** The topic it publishes to. */
  readonly topic: string
  /** Its members, as stored. */
  members(): Promise<string[]>
  /** Add members: they can open the next messages, not the ones sent before. */
  add(...agents: string[]): Promise<void>
  /** Remove members: they cannot open the next messages; ones already sent stay readable. */
  remove(...agents: string[]): Promise<void>
  /** Publish to the topic, sealed for the members as they are now. */
  publish(content: Content, options?: Omit<PublishOptions, 'members'>): Promise<PublishResult>
}
