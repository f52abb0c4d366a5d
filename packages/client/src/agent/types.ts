/** The client's public types: what `createAgent` takes, what an `Agent` does and reports. */
import type {
  AuthLevel,
  BodyPart,
  IdentityDocument,
  IdentityFetcher,
  Message,
  Phase,
  ReceivedInfo,
  Sealed,
  Storage,
  TransportFactory,
} from '@agentmsg/core'
import type { WebSocketConstructor } from '@agentmsg/transport-relay'
import type { Group, PublishOptions, PublishResult, SubscribeOptions } from './topic-types.js'

export type { Group, PublishOptions, PublishResult, SubscribeOptions }

/** Which transport carried a message: its `protocol` (`https`, `relay`, or a custom one's). */
export type TransportKind = 'https' | 'relay' | (string & {})

/** How a message was routed: `relay` through relays, `direct` to the recipient (its inbox…). */
export type Route = 'direct' | 'relay'

/**
 * How far a relay is trusted with bodies (SPEC §5.7.2): bodies through `untrusted` relays are
 * sealed (PROFILE §8); `trusted` (a known party's) and `self-operated` ones get plaintext.
 */
export type RelayTrust = 'untrusted' | 'trusted' | 'self-operated'

/** Options for `createAgent`. */
export interface AgentOptions {
  /** Who this agent is, the first time only: then `storage`'s wins. @default a new did:key */
  identity?: {
    /** The 32-byte Ed25519 secret (seed) to use instead of a new one. */
    seed?: Uint8Array
    /** A URL agent id (`https://…`); its identity document is built unless `document` is given. */
    agentId?: string
    /** The URL agent's identity document (its active key must be the seed's). */
    document?: IdentityDocument
    /** `display` of a built identity document. */
    display?: string
    /** `false`: fail with `not_found` when `storage` holds none, not make one. @default true */
    create?: boolean
  }
  /** Everything the agent remembers (a persistent adapter survives restarts). @default memory */
  storage?: Storage
  /** This agent's relays: streamed from, and in `from.relays` and a URL agent's document. */
  relays?: string[]
  /** Transports, tried in this order; each its own `storage` namespace. @default [https, relay] */
  transports?: TransportFactory[]
  /** Relays trusted with bodies, by URL (SPEC §5.7.2). @default every relay `untrusted` */
  relayTrust?: Record<string, RelayTrust>
  /** How relay streams receive (default transports). @default 'sse' */
  mode?: 'sse' | 'ws'
  /** The fetch for inbox deliveries, relay requests and identity documents. @default globalThis.fetch */
  fetch?: typeof fetch
  /** The fetch for SSE streams (no overall timeout). @default `fetch` */
  streamFetch?: typeof fetch
  /** WebSocket constructor for `mode: 'ws'`. @default the platform's */
  WebSocket?: WebSocketConstructor
  /** Fetches identity documents of URL agents. @default createIdentityFetcher({ fetch }) */
  resolveIdentity?: IdentityFetcher
  /** The clock, epoch ms. @default Date.now */
  now?: () => number
  /** Errors nobody else sees (also emitted as `error` events). */
  onError?: (error: unknown) => void
  /** `route: 'auto'`: relays after failed direct targets; `false`: only without. @default true */
  fallbackToRelay?: boolean
  /** Don't listen on transports (no relay streams): for agents that only send. @default false */
  sendOnly?: boolean
}

/** Content of a message: text, or body parts. */
export type Content = string | { parts: BodyPart[]; contentType?: string }

/** Options for `Agent.send`. */
export interface SendOptions {
  /** Continue this conversation. @default a new one (phase `greeting`) */
  conversationId?: string
  /** @default 'greeting' for the first message of a conversation, else 'request' */
  phase?: Phase
  /** Force a route. @default 'auto' (direct targets first, then relays) */
  route?: 'direct' | 'relay' | 'auto'
  /** The recipient's relays, when known out of band. */
  relays?: string[]
  /** `auth_level` to ask for; `0` signs with an introduction token (PROFILE §5). */
  authLevel?: AuthLevel
  /** The introduction token for `authLevel: 0`. @default the only one held (see `introduce`) */
  introduction?: string
  /** `ttl_seconds`: it expires that long after it was written. */
  ttlSeconds?: number
  /**
   * Seal the body (PROFILE §8): `true` on every route (`not_found` when the key is unknown).
   * @default sealed unless the target is confidential (an inbox, relays trusted in `relayTrust`)
   */
  seal?: boolean
  /** Send plaintext rather than drop targets when the key is unknown. @default false */
  allowPlaintext?: boolean
  /** Abort the send; the promise rejects with the signal's reason. */
  signal?: AbortSignal
}

/** What `Agent.send` resolved with. */
export interface SendResult {
  /** The sent message's `message_id`. */
  messageId: string
  /** Its conversation: pass it on to continue. */
  conversationId: string
  /** The route of the target that took it (after any fallback). */
  route: Route
  /** The transport that took it (`https`, `relay`, or a custom one's protocol). */
  transport: TransportKind
  /** The relay that accepted it, for `route: 'relay'`. */
  relayUrl?: string
  /** Whether the body went sealed for the recipient (PROFILE §8). */
  sealed: boolean
  /** Kept in the outbox and retried (PROFILE §6); events tell the outcome. */
  pending?: boolean
}

/** A message delivered to the application. */
export interface ReceivedMessage {
  /** The message, verified (a sealed body opened). */
  message: Message
  /** The authentication level it was verified at (PROFILE §5). */
  level: AuthLevel
  /** Where the verifying key came from. */
  source: ReceivedInfo['source']
  /** Pinned, introduced or accepted before (PROFILE §5). */
  knownContact: boolean
  /** The transport it came by. */
  transport: TransportKind
  /** Its `conversation_id`. */
  conversationId: string
  /** `from.agent`. */
  from: string
  /** Plain text of the text parts, joined by LF (of the opened body, when it was sealed). */
  text: string
  /**
   * Whether the body came sealed (PROFILE §8): `true`, and `message` carries it opened;
   * `'not-for-me'`, a topic message sealed for other members (its text is empty).
   */
  sealed: Sealed
  /** The topic it was published to, for a topic message. */
  topic?: string
}

/** Payload of `error` events. */
export interface AgentErrorEvent {
  /** What went wrong. */
  error: unknown
  /** The message concerned, when there is one. */
  message?: Message
  /** `from.agent` of a refused message. */
  from?: string
  /** The transport concerned, when there is one. */
  transport?: TransportKind
}

/** Payload of `delivered` events. */
export interface AgentDeliveredEvent {
  /** The message's `message_id`. */
  messageId: string
  /** The recipient's agent id. */
  to: string
  /** Direct or through a relay. */
  route: Route
  /** The relay that accepted it, for `route: 'relay'`. */
  relayUrl?: string
}

/** Payload of `undeliverable` events (refused, or retries ran out: tell the human, SPEC §8). */
export interface AgentUndeliverableEvent extends Omit<AgentDeliveredEvent, 'relayUrl'> {
  /** Why, for the human. */
  reason: string
  /** The wire error code, when a peer refused it. */
  code?: string
}

/** Event name → payload. */
export interface AgentEvents {
  /** A message was received. */
  message: ReceivedMessage
  /** An error nobody awaited. */
  error: AgentErrorEvent
  /** A target accepted a message. */
  delivered: AgentDeliveredEvent
  /** A send was refused, or its retries ran out. */
  undeliverable: AgentUndeliverableEvent
}

/** Listener of an agent event; a `message` listener's promise is awaited before handled. */
export type AgentListener<K extends keyof AgentEvents> = (
  event: AgentEvents[K],
) => void | Promise<void>

/** A contact as stored. */
export interface Contact {
  /** Its agent id. */
  agent: string
  /** The keys kept for it (pinned or introduced), with their fingerprints. */
  keys: Array<{ keyId: string; source: 'pinned' | 'introduction'; fingerprint: string }>
  /** Relays it can be reached at. */
  relays: string[]
  /** Pinned, introduced or accepted before (PROFILE §5). */
  knownContact: boolean
}

/** Options for `Contacts.pin`. */
export interface PinOptions {
  /** The key's fragment. @default did:key: its own; else the first 8 base64url chars of the key */
  keyId?: string
  /** Relays where the contact can be reached. */
  relays?: string[]
}

/** Pinned and introduced contacts. */
export interface Contacts {
  /** Pin a peer key after comparing fingerprints out of band (level 2). */
  pin(agent: string, publicKey: Uint8Array | string, options?: PinOptions): Promise<void>
  /** Every agent with stored keys or routes. */
  list(): Promise<Contact[]>
  /** Forget an agent's keys, route and known-contact mark (levels and floor stay). */
  remove(agent: string): Promise<void>
  /** A short human-comparable string for a public key. */
  fingerprint(publicKey: Uint8Array | string): Promise<string>
}

/** Options for `Agent.introduce`. */
export interface IntroduceOptions {
  /** The agent the token introduces. @default the first sender whose message verifies with it */
  agent?: string
}

/** This agent's own identity. */
export interface OwnIdentity {
  /** The agent's id. */
  agentId: string
  /** The active key. */
  publicKey: Uint8Array
  /** Its full key id. */
  keyId: string
  /** A URL agent's identity document. */
  document: IdentityDocument | undefined
}

/** An agent: send, reply, receive; the route is chosen for you. */
export interface Agent {
  /** Its agent id: a did:key or an https URL. */
  readonly id: string
  /** Its id, active key and (URL agents) identity document. */
  readonly identity: OwnIdentity
  /** Pinned keys, introductions and known contacts. */
  readonly contacts: Contacts
  /** Send to the agent `to` over the best route; resolves once taken or kept in the outbox. */
  send(to: string, content: Content, options?: SendOptions): Promise<SendResult>
  /** Receive what is published to `topic` on this agent's relays; kept across restarts. */
  subscribe(topic: string, options?: SubscribeOptions): Promise<void>
  /** Stop receiving `topic`. */
  unsubscribe(topic: string): Promise<void>
  /** The topics subscribed to. */
  topics(): string[]
  /** Publish to `topic` on this agent's relays, sealed for `options.members`. */
  publish(topic: string, content: Content, options?: PublishOptions): Promise<PublishResult>
  /** The group of `topic`: a member list kept in storage. */
  group(topic: string): Group
  /** Answer `message` in its conversation (phase `response` by default). */
  reply(
    message: Message | ReceivedMessage,
    content: Content,
    options?: Omit<SendOptions, 'conversationId'>,
  ): Promise<SendResult>
  /** Listen to an event; returns the function that stops listening. */
  on<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): () => void
  /** Stop a listener. */
  off<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): void
  /** Messages as they arrive, until `close()`; each iterator buffers from its creation. */
  messages(): AsyncIterable<ReceivedMessage>
  /** Hold an introduction token for one peer (PROFILE §5); returns its `intro-…` fragment. */
  introduce(token: string, options?: IntroduceOptions): Promise<string>
  /** URL agents: a new active key; the old one is retired. Returns the new document. */
  rotateKey(): Promise<IdentityDocument>
  /** URL agents: revoke a key (by fragment) at once. */
  revokeKey(fragment: string): Promise<IdentityDocument>
  /** Stop transports and timers. Pending deliveries stay in the outbox for the next run. */
  close(): Promise<void>
}
