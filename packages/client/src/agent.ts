/**
 * The Agent: one object that composes identity, storage, the https sender, relay clients and
 * the receiving pipeline, and hides which route a message takes (PROFILE §4, §5, §7, §9).
 * Isomorphic: no Node built-ins (the Node inbox is wired by `./node.ts`).
 */
import {
  AgentMsgError,
  AuthLevelTracker,
  ErrorReplyGate,
  KeyStore,
  ReplayGuard,
  agentEndpoints,
  assertRelayUrl,
  base64urlDecode,
  base64urlEncode,
  chainResolvers,
  createErrorMessage,
  createIdentityDocument,
  createMessage,
  createMessageId,
  didKeyFragment,
  didKeyFromPublicKey,
  didKeyResolver,
  ed25519Signer,
  generateKeyPair,
  getDefaultCryptoProvider,
  hmacSigner,
  identityDocumentResolver,
  introducedIdentity,
  isAgentMsgError,
  isDidKey,
  keyPairFromSeed,
  memoryStorage,
  parseAgentId,
  revokeKey as revokeDocumentKey,
  rotateKey as rotateDocumentKey,
  signMessage,
  validateIdentityDocument,
  validateMessage,
  type AuthDecision,
  type AuthLevel,
  type BodyPart,
  type ErrorPhaseCode,
  type IdentityDocument,
  type IdentityDocumentCache,
  type IdentityFetcher,
  type JsonValue,
  type KeyPair,
  type KeyResolver,
  type KeySource,
  type Message,
  type Phase,
  type Signer,
  type Storage,
  type UnsignedMessage,
} from '@agentmsg/core'
// Type-only: the https sender and identity fetcher (with ky) are loaded with import() when first
// needed (see AgentImpl.#httpsSender), so a relay-only browser agent does not pay for them.
import type { HttpsSender } from '@agentmsg/transport-https'
import {
  createRelayClient,
  publishWithFailover,
  type RelayClient,
  type RelayDelivery,
  type StreamHandle,
  type WebSocketConstructor,
} from '@agentmsg/transport-relay'

// ---------------------------------------------------------------------------------------------
// Public types

/** Which transport carried a message. */
export type TransportKind = 'https' | 'relay'

/** How a message is routed: straight to the recipient's inbox, or through its relays. */
export type Route = 'direct' | 'relay'

/** Options for {@link createAgent}. */
export interface AgentOptions {
  /**
   * Who this agent is. Used only the first time: afterwards the identity stored in `storage`
   * (under `keys/self/`) wins, and a different `agentId` is an error.
   * @default a new did:key, persisted
   */
  identity?: {
    /** The 32-byte Ed25519 secret (seed) to use instead of a new one. */
    seed?: Uint8Array
    /** A URL agent id (`https://…`); its identity document is built unless `document` is given. */
    agentId?: string
    /** The URL agent's identity document (its active key must be the seed's). */
    document?: IdentityDocument
    /** `display` of a built identity document. */
    display?: string
  }
  /** Everything the agent remembers. Use a persistent adapter to survive restarts. @default memoryStorage() */
  storage?: Storage
  /**
   * This agent's relays: subscribed and streamed from on start, written into `from.relays` of
   * every message sent (and into a URL agent's identity document).
   */
  relays?: string[]
  /** How relay streams receive. @default 'sse' */
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
  /**
   * Fall back to the recipient's relays when the first direct attempt fails with a network
   * error or 5xx (the message is then removed from the outbox). @default true
   */
  fallbackToRelay?: boolean
  /** Don't connect relay streams on start (call `start()`-less agents for sending only). @default false */
  sendOnly?: boolean
}

/** Content of a message: text, or body parts. */
export type Content = string | { parts: BodyPart[]; contentType?: string }

/** Options for {@link Agent.send}. */
export interface SendOptions {
  /** Continue this conversation. @default a new one (phase `greeting`) */
  conversationId?: string
  /** @default 'greeting' for the first message of a conversation, else 'request' */
  phase?: Phase
  /** Force a route. @default 'auto' (inbox when there is one, else relays) */
  route?: 'direct' | 'relay' | 'auto'
  /** The recipient's relays, when known out of band. */
  relays?: string[]
  /**
   * `auth_level` to ask for (greeting-phase negotiation). `0` signs with an introduction token
   * (HMAC, level 0) and carries this agent's identity document, so the peer learns its key at
   * level 1.
   */
  authLevel?: AuthLevel
  /** The introduction token for `authLevel: 0`. @default the only one held (see `introduce`) */
  introduction?: string
  /** `ttl_seconds`. */
  ttlSeconds?: number
  /** Abort the send. */
  signal?: AbortSignal
}

/** What {@link Agent.send} resolved with. */
export interface SendResult {
  messageId: string
  conversationId: string
  /** The route the message took (after any fallback). */
  route: Route
  /** The relay that accepted it, for `route: 'relay'`. */
  relayUrl?: string
  /**
   * `true` when the direct delivery is still being retried from the durable outbox (no relay
   * to fall back to); `delivered` / `undeliverable` events tell the outcome.
   */
  pending?: boolean
}

/** A message delivered to the application. */
export interface ReceivedMessage {
  message: Message
  /** The authentication level it was verified at (PROFILE §5). */
  level: AuthLevel
  /** Where the verifying key came from. */
  source: KeySource
  /** Pinned, introduced or accepted before (PROFILE §5). */
  knownContact: boolean
  transport: TransportKind
  conversationId: string
  /** `from.agent`. */
  from: string
  /** Plain text of the text parts, joined by LF. */
  text: string
}

/** Payload of `error` events. */
export interface AgentErrorEvent {
  error: unknown
  /** The message concerned, when there is one. */
  message?: Message
  /** `from.agent` of a refused message. */
  from?: string
  transport?: TransportKind
}

/** Payload of `delivered` events. */
export interface DeliveredEvent {
  messageId: string
  to: string
  route: Route
  relayUrl?: string
}

/** Payload of `undeliverable` events (refused, or retries ran out: tell the human, SPEC §8). */
export interface UndeliverableEvent {
  messageId: string
  to: string
  route: Route
  reason: string
  code?: string
}

/** Event name → payload. */
export interface AgentEvents {
  message: ReceivedMessage
  error: AgentErrorEvent
  delivered: DeliveredEvent
  undeliverable: UndeliverableEvent
}

/** A contact as stored. */
export interface Contact {
  agent: string
  keys: Array<{ keyId: string; source: 'pinned' | 'introduction'; fingerprint: string }>
  relays: string[]
  knownContact: boolean
}

/** Options for {@link Contacts.pin}. */
export interface PinOptions {
  /** The key's fragment. @default did:key: its own; else the first 8 base64url chars of the key */
  keyId?: string
  /** Relays where the contact can be reached. */
  relays?: string[]
}

/** Pinned and introduced contacts. */
export interface Contacts {
  /** Pin a peer key after comparing {@link fingerprint}s out of band (level 2). */
  pin(agent: string, publicKey: Uint8Array | string, options?: PinOptions): Promise<void>
  /** Every agent with stored keys or routes. */
  list(): Promise<Contact[]>
  /** Forget an agent's keys, route and known-contact mark (levels and floor stay). */
  remove(agent: string): Promise<void>
  /** A short human-comparable string for a public key. */
  fingerprint(publicKey: Uint8Array | string): Promise<string>
}

/** Listener of an agent event; `message` listeners may return a promise (awaited before ack). */
export type AgentListener<K extends keyof AgentEvents> = (
  event: AgentEvents[K],
) => void | Promise<void>

/** This agent's own identity. */
export interface OwnIdentity {
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
  readonly id: string
  readonly identity: OwnIdentity
  readonly contacts: Contacts
  send(to: string, content: Content, options?: SendOptions): Promise<SendResult>
  /** Answer `message` in its conversation (phase `response` by default). */
  reply(
    message: Message | ReceivedMessage,
    content: Content,
    options?: Omit<SendOptions, 'conversationId'>,
  ): Promise<SendResult>
  on<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): () => void
  off<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): void
  /** Messages as they arrive, until `close()`; each iterator buffers from its creation. */
  messages(): AsyncIterable<ReceivedMessage>
  /** Hold an introduction token (level 0); returns its `intro-…` fragment. */
  introduce(token: string): Promise<string>
  /** URL agents: a new active key; the old one is retired. Returns the new document. */
  rotateKey(): Promise<IdentityDocument>
  /** URL agents: revoke a key (by fragment) at once. */
  revokeKey(fragment: string): Promise<IdentityDocument>
  /** Stop streams and timers. Pending deliveries stay in the outbox for the next run. */
  close(): Promise<void>
}

// ---------------------------------------------------------------------------------------------
// Storage layout

/** Storage keys the agent uses (all under the storage it was given). */
export const STORAGE_KEYS = {
  /** Own identity: agent id, key seeds, active fragment, document. */
  self: 'keys/self/identity',
  /** Peer routes: `peers/<agent>` → {relays, updated}. */
  peers: 'peers/',
  /** Conversations: `conv/<conversation_id>` → {peer, next}. */
  conversations: 'conv/',
  /** Relay stream cursors: `relay/cursor/<relay url>`. */
  cursors: 'relay/cursor/',
  /** Relay subscriptions: `relay/sub/<relay url>` → subscription id. */
  subscriptions: 'relay/sub/',
  /** The https sender's durable outbox. */
  outbox: 'outbox/',
} as const

const enc = encodeURIComponent

interface SelfRecord {
  agentId: string
  active: string
  seeds: Record<string, string>
  document?: IdentityDocument
  [k: string]: JsonValue | undefined | IdentityDocument | Record<string, string>
}

interface PeerRecord {
  relays: string[]
  updated: number
}

interface ConversationRecord {
  peer: string
  next: number
}

/** Pieces shared with the Node inbox (same resolver, replay guard, level tracker). */
export interface AgentInternals {
  storage: Storage
  resolver: KeyResolver
  documents: IdentityDocumentCache
  replayGuard: ReplayGuard
  authLevels: AuthLevelTracker
  identityDocument(): IdentityDocument | undefined
  /** After the inbox verified, checked replay and levels: the rest of the pipeline. */
  deliverFromInbox(
    message: Message,
    info: { level: AuthLevel; source: KeySource; knownContact: boolean },
  ): Promise<void>
  /** Sign and deliver an error phase message built by the inbox. */
  sendErrorReply(
    message: UnsignedMessage,
    to: { agent: string; inbox?: string; relays?: string[] },
  ): Promise<void>
  reportError(event: AgentErrorEvent): void
  onClose(task: () => Promise<void>): void
}

export const INTERNALS: unique symbol = Symbol('agentmsg.client.internals')

// ---------------------------------------------------------------------------------------------
// Helpers

/**
 * A short human-comparable fingerprint of a public key: base32 (RFC 4648, lower case) of its
 * SHA-256, first 24 characters in groups of 4 (120 bits), e.g. `k3tq-…`.
 */
export async function fingerprint(publicKey: Uint8Array | string): Promise<string> {
  const bytes = typeof publicKey === 'string' ? base64urlDecode(publicKey, 'publicKey') : publicKey
  const digest = await getDefaultCryptoProvider().sha256(bytes)
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  let out = ''
  let acc = 0
  let bits = 0
  for (const b of digest) {
    acc = (acc << 8) | b
    bits += 8
    while (bits >= 5 && out.length < 24) {
      out += alphabet[(acc >>> (bits - 5)) & 31]
      bits -= 5
    }
    acc &= (1 << bits) - 1
    if (out.length >= 24) break
  }
  return out.match(/.{4}/g)!.join('-')
}

function textOf(message: Message): string {
  return message.body.parts
    .filter((p): p is Extract<BodyPart, { type: 'text' }> => p.type === 'text')
    .map((p) => p.text)
    .join('\n')
}

function isReceived(x: Message | ReceivedMessage): x is ReceivedMessage {
  return typeof (x as ReceivedMessage).transport === 'string' && 'message' in x && 'level' in x
}

function uniq(list: Array<string | undefined>): string[] {
  return [...new Set(list.filter((x): x is string => typeof x === 'string'))]
}

/** Loads the https transport on first use (a separate chunk for bundlers). */
const loadHttps = () => import('@agentmsg/transport-https')

/**
 * A `DeliveryError` of the https sender, told by its fields: the class lives in the lazily
 * loaded transport, so `instanceof` would force it into every bundle.
 */
function isDeliveryError(error: unknown): error is AgentMsgError & { outcome: string } {
  return (
    isAgentMsgError(error) &&
    typeof (error as { outcome?: unknown }).outcome === 'string' &&
    typeof (error as { messageId?: unknown }).messageId === 'string' &&
    typeof (error as { attempts?: unknown }).attempts === 'number'
  )
}

/** Direct delivery failed in a way a relay may cure: a network error or a 5xx. */
function retryable(error: unknown): boolean {
  if (isDeliveryError(error)) return error.outcome === 'undeliverable'
  return !isAgentMsgError(error) || error.status >= 500
}

// ---------------------------------------------------------------------------------------------
// The agent

/** Refuses lower levels like its parent, and reports each refusal. */
class ReportingAuthLevels extends AuthLevelTracker {
  constructor(
    options: ConstructorParameters<typeof AuthLevelTracker>[0],
    readonly report: (error: unknown, from: string) => void,
  ) {
    super(options)
  }
  quiet = false
  override async evaluate(input: Parameters<AuthLevelTracker['evaluate']>[0]) {
    try {
      return await super.evaluate(input)
    } catch (error) {
      if (!this.quiet) this.report(error, input.from)
      throw error
    }
  }
  evaluateQuiet(input: Parameters<AuthLevelTracker['evaluate']>[0]) {
    return super.evaluate(input)
  }
}

class AgentImpl implements Agent {
  readonly id: string
  readonly contacts: Contacts
  readonly #o: AgentOptions
  readonly #storage: Storage
  readonly #now: () => number
  readonly #fetch: typeof fetch
  readonly #relays: string[]
  readonly #keyStore: KeyStore
  readonly #documents: IdentityDocumentCache
  readonly #resolver: KeyResolver
  readonly #replay: ReplayGuard
  readonly #levels: ReportingAuthLevels
  readonly #gate: ErrorReplyGate
  #sender: Promise<HttpsSender> | undefined
  readonly #listeners = new Map<keyof AgentEvents, Set<(e: never) => unknown>>()
  readonly #clients: RelayClient[] = []
  readonly #streams: StreamHandle[] = []
  readonly #inFlight = new Set<string>()
  readonly #closeTasks: Array<() => Promise<void>> = []
  readonly #iterators = new Set<{ push(m: ReceivedMessage): void; end(): void }>()
  /** Deliveries waiting for the application to attach a message listener or iterator. */
  #consumerWaiters: Array<() => void> = []
  #self: SelfRecord
  #keys: KeyPair
  #signer: Signer
  #lock: Promise<unknown> = Promise.resolve()
  #closed = false

  constructor(options: AgentOptions, storage: Storage, self: SelfRecord, keys: KeyPair) {
    this.#o = options
    this.#storage = storage
    this.#now = options.now ?? Date.now
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
    this.#relays = uniq((options.relays ?? []).map((r, i) => assertRelayUrl(r, `relays[${i}]`)))
    this.#self = self
    this.#keys = keys
    this.id = self.agentId
    this.#signer = this.#makeSigner()
    const now = this.#now
    this.#keyStore = new KeyStore({ storage, now })
    let fetchIdentity: IdentityFetcher | undefined = options.resolveIdentity
    this.#documents = identityDocumentResolver({
      // Only URL agents have identity documents: the default fetcher loads on first use.
      fetch:
        fetchIdentity ??
        (async (agentId, o) => {
          fetchIdentity ??= (await loadHttps()).createIdentityFetcher({ fetch: this.#fetch })
          return fetchIdentity(agentId, o)
        }),
      now,
    })
    this.#resolver = chainResolvers(this.#documents, didKeyResolver(), this.#keyStore)
    this.#replay = new ReplayGuard({ storage, now })
    this.#levels = new ReportingAuthLevels({ storage, now }, (error, from) =>
      this.#error({ error, from }),
    )
    this.#gate = new ErrorReplyGate({ now })
    this.contacts = this.#makeContacts()
  }

  /**
   * The https sender with its durable outbox, created on first need: a direct send, an error
   * reply to an inbox, or pending outbox entries at creation (resumed as before).
   */
  #httpsSender(): Promise<HttpsSender> {
    this.#sender ??= loadHttps().then(async ({ createSender }) => {
      const sender = createSender({
        storage: this.#storage,
        prefix: STORAGE_KEYS.outbox,
        fetch: this.#fetch,
      })
      sender.on('delivered', (e) =>
        this.#emit('delivered', {
          messageId: e.message_id,
          to: this.#recipientOf(e.message_id) ?? '',
          route: 'direct',
        }),
      )
      sender.on('failed', (e) =>
        this.#emit('undeliverable', {
          messageId: e.message_id,
          to: this.#recipientOf(e.message_id) ?? '',
          route: 'direct',
          reason: e.message,
          code: e.code,
        }),
      )
      sender.on('undeliverable', (e) =>
        this.#emit('undeliverable', {
          messageId: e.message_id,
          to: this.#recipientOf(e.message_id) ?? '',
          route: 'direct',
          reason: e.reason,
        }),
      )
      sender.on('error', (e) => this.#error({ error: e.error }))
      // Created after close(): closed at once, so sends reject as they did.
      if (this.#closed) await sender.close()
      return sender
    })
    // A failed load (e.g. a chunk that did not download) is tried again on the next need.
    const loading = this.#sender
    loading.catch(() => {
      if (this.#sender === loading) this.#sender = undefined
    })
    return loading
  }

  /** @internal Load the sender now when the outbox holds deliveries from an earlier run. */
  async resumeOutbox(): Promise<void> {
    const pending = await this.#storage.list(STORAGE_KEYS.outbox, { limit: 1 })
    if (pending.length > 0) await this.#httpsSender()
  }

  readonly #recipients = new Map<string, string>()
  #recipientOf(messageId: string): string | undefined {
    return this.#recipients.get(messageId)
  }

  get identity(): OwnIdentity {
    return {
      agentId: this.id,
      publicKey: this.#keys.publicKey,
      keyId: this.#signer.keyId,
      document: this.#self.document,
    }
  }

  #makeSigner(): Signer {
    return isDidKey(this.id)
      ? ed25519Signer(this.#keys)
      : ed25519Signer(this.#keys, `${this.id}#${this.#self.active}`)
  }

  /** A signer that always signs with the current key (relay clients keep it across rotations). */
  readonly #liveSigner: Signer = ((current: () => Signer): Signer => ({
    alg: 'ed25519',
    get keyId() {
      return current().keyId
    },
    sign: (data: Uint8Array) => current().sign(data),
  }))(() => this.#signer)

  // -- start -----------------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.#o.sendOnly) return
    for (const relayUrl of this.#relays) {
      const client = createRelayClient({
        relayUrl,
        agent: this.id,
        signer: this.#liveSigner,
        resolver: this.#resolver,
        fetch: this.#fetch,
        ...(this.#o.streamFetch ? { streamFetch: this.#o.streamFetch } : {}),
        ...(this.#o.WebSocket ? { WebSocket: this.#o.WebSocket } : {}),
      })
      this.#clients.push(client)
      const subKey = STORAGE_KEYS.subscriptions + enc(relayUrl)
      if ((await this.#storage.get(subKey)) === undefined) {
        const { subscriptionId } = await client.subscribe()
        await this.#storage.put(subKey, subscriptionId)
      }
      const cursorKey = STORAGE_KEYS.cursors + enc(relayUrl)
      const after = await this.#storage.get(cursorKey)
      const handle = client.stream(
        async (delivery) => {
          await this.#fromRelay(delivery)
          if (delivery.cursor) await this.#storage.put(cursorKey, delivery.cursor)
        },
        {
          mode: this.#o.mode ?? 'sse',
          ...(typeof after === 'string' ? { after } : {}),
          onRejected: (r) => this.#error({ error: r.error, transport: 'relay' }),
          onError: (error) => this.#error({ error, transport: 'relay' }),
        },
      )
      this.#streams.push(handle)
    }
  }

  // -- events ----------------------------------------------------------------------------

  on<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): () => void {
    let set = this.#listeners.get(event)
    if (!set) this.#listeners.set(event, (set = new Set()))
    set.add(listener as (e: never) => unknown)
    if (event === 'message') this.#wakeConsumers()
    return () => this.off(event, listener)
  }

  #hasConsumer(): boolean {
    return (this.#listeners.get('message')?.size ?? 0) > 0 || this.#iterators.size > 0
  }

  #wakeConsumers(): void {
    for (const wake of this.#consumerWaiters.splice(0)) wake()
  }

  /**
   * Streams start inside createAgent, before the application can attach its listener: a message
   * waiting in a mailbox (the usual case after a restart) would otherwise be handled with nobody
   * listening, then remembered and acknowledged — lost. So delivery waits for a consumer; until
   * then the message is neither remembered nor acknowledged.
   */
  async #waitForConsumer(): Promise<void> {
    while (!this.#hasConsumer()) {
      if (this.#closed) {
        throw new AgentMsgError('unavailable', 'the agent was closed before the message was handled')
      }
      await new Promise<void>((resolve) => this.#consumerWaiters.push(resolve))
    }
  }

  off<K extends keyof AgentEvents>(event: K, listener: AgentListener<K>): void {
    this.#listeners.get(event)?.delete(listener as (e: never) => unknown)
  }

  /** Call listeners; returns their promises (message listeners are awaited). */
  #emit<K extends keyof AgentEvents>(event: K, payload: AgentEvents[K]): Promise<unknown>[] {
    const out: Promise<unknown>[] = []
    for (const l of [...(this.#listeners.get(event) ?? [])]) {
      try {
        const r = (l as (e: AgentEvents[K]) => unknown)(payload)
        if (r && typeof (r as Promise<unknown>).then === 'function') out.push(r as Promise<unknown>)
      } catch (error) {
        if (event === 'error')
          queueMicrotask(() => {
            throw error
          })
        else out.push(Promise.reject(error))
      }
    }
    return out
  }

  #error(event: AgentErrorEvent): void {
    try {
      this.#o.onError?.(event.error)
    } catch {
      // a throwing reporter must not break the pipeline
    }
    void this.#emit('error', event)
  }

  messages(): AsyncIterable<ReceivedMessage> {
    const buffer: ReceivedMessage[] = []
    let wake: (() => void) | undefined
    let ended = this.#closed
    const sink = {
      push: (m: ReceivedMessage) => {
        buffer.push(m)
        wake?.()
      },
      end: () => {
        ended = true
        wake?.()
      },
    }
    this.#iterators.add(sink)
    this.#wakeConsumers()
    const iterators = this.#iterators
    return {
      [Symbol.asyncIterator]() {
        return {
          async next(): Promise<IteratorResult<ReceivedMessage>> {
            while (buffer.length === 0 && !ended) {
              await new Promise<void>((r) => (wake = r))
              wake = undefined
            }
            if (buffer.length > 0) return { value: buffer.shift()!, done: false }
            iterators.delete(sink)
            return { value: undefined, done: true }
          },
          async return(): Promise<IteratorResult<ReceivedMessage>> {
            iterators.delete(sink)
            ended = true
            return { value: undefined, done: true }
          },
        }
      },
    }
  }

  // -- receiving -------------------------------------------------------------------------

  async #fromRelay(delivery: RelayDelivery): Promise<void> {
    const { message, verified } = delivery
    if (message.to.agent !== this.id) return // topics: not handled by this client
    const from = message.from.agent
    const key = `${from}\n${message.message_id}`
    if (this.#inFlight.has(key)) return
    this.#inFlight.add(key)
    try {
      try {
        this.#replay.checkFreshness(message)
      } catch (error) {
        this.#error({ error, message, from, transport: 'relay' })
        return
      }
      if (await this.#replay.isDuplicate(from, message.message_id)) return
      const { protocolError } = validateMessage(message)
      if (protocolError) {
        if ((await this.#replay.checkAndRemember(message)) === 'new')
          await this.#errorReply(message, protocolError.code, protocolError.message)
        return
      }
      let decision: AuthDecision
      try {
        decision = await this.#levels.evaluateQuiet({
          from,
          conversationId: message.conversation_id,
          phase: message.phase,
          requestedLevel: message.auth_level,
          level: verified.level,
          algs: verified.signatures.map((s) => s.alg),
        })
      } catch (error) {
        this.#error({ error, message, from, transport: 'relay' })
        if (isAgentMsgError(error) && error.code === 'insufficient_auth_level')
          await this.#errorReply(message, 'insufficient_auth_level', error.message)
        // Refused: acknowledged, never delivered, and remembered so it is not evaluated again.
        await this.#replay.remember(from, message.message_id)
        return
      }
      await this.#levels.commit(decision)
      const knownContact = await this.#levels.isKnownContact(from)
      await this.#accept(message, {
        level: verified.level,
        source: verified.source,
        knownContact,
        transport: 'relay',
      })
      await this.#replay.remember(from, message.message_id)
    } finally {
      this.#inFlight.delete(key)
    }
  }

  /** Steps shared by both transports once a message was admitted. */
  async #accept(
    message: Message,
    info: { level: AuthLevel; source: KeySource; knownContact: boolean; transport: TransportKind },
  ): Promise<void> {
    await this.#waitForConsumer()
    const from = message.from.agent
    let { knownContact } = info
    // A level-0 greeting with an identity document: its keys become level-1 keys (PROFILE §5).
    if (info.level === 0 && message.phase === 'greeting') {
      try {
        const doc = introducedIdentity(message)
        if (doc) await this.#keyStore.addIntroducedKeys(doc)
      } catch (error) {
        this.#error({ error, message, from, transport: info.transport })
      }
      if (info.source === 'shared-secret') {
        await this.#levels.markKnownContact(from, 'introduced')
        knownContact = true
      }
    }
    // Routes: where the sender can be reached (only from verified messages).
    if (Array.isArray(message.from.relays) && message.from.relays.length > 0)
      await this.#rememberRelays(from, message.from.relays)
    await this.#exclusive(async () => {
      const k = STORAGE_KEYS.conversations + enc(message.conversation_id)
      const c = (await this.#storage.get(k)) as ConversationRecord | undefined
      const next = Math.max(c?.next ?? 0, message.sequence + 1)
      if (!c || c.next !== next) await this.#storage.put(k, { peer: from, next })
    })
    const received: ReceivedMessage = {
      message,
      level: info.level,
      source: info.source,
      knownContact,
      transport: info.transport,
      conversationId: message.conversation_id,
      from,
      text: textOf(message),
    }
    for (const it of this.#iterators) it.push(received)
    const results = await Promise.allSettled(this.#emit('message', received))
    for (const r of results)
      if (r.status === 'rejected') this.#error({ error: r.reason, message, from })
  }

  async #rememberRelays(agent: string, relays: string[]): Promise<void> {
    const valid: string[] = []
    for (const r of relays) {
      try {
        valid.push(assertRelayUrl(r, 'from.relays'))
      } catch {
        // ignore a bad entry
      }
    }
    if (valid.length === 0) return
    const k = STORAGE_KEYS.peers + enc(agent)
    const prev = (await this.#storage.get(k)) as PeerRecord | undefined
    const merged = uniq([...valid, ...(prev?.relays ?? [])]).slice(0, 8)
    if (prev && prev.relays.join('\n') === merged.join('\n')) return
    await this.#storage.put(k, { relays: merged, updated: this.#now() })
  }

  async #errorReply(original: Message, code: ErrorPhaseCode, text: string): Promise<void> {
    if (original.phase === 'error' || !this.#gate.allow(original, true)) return
    try {
      const unsigned = createErrorMessage({
        original,
        from: this.id,
        code,
        message: text,
        ...(this.#relays.length ? { relays: this.#relays } : {}),
      })
      await this.#deliverUnsigned(unsigned, { agent: original.from.agent })
    } catch (error) {
      this.#error({ error, message: original })
    }
  }

  async #deliverUnsigned(
    unsigned: UnsignedMessage,
    to: { agent: string; inbox?: string; relays?: string[] },
  ): Promise<void> {
    const signed = await signMessage(unsigned, this.#signer)
    const route = await this.#route(to.agent, { route: 'auto', relays: to.relays ?? [] })
    const inbox = to.inbox ?? route.inbox
    if (inbox) await (await this.#httpsSender()).send(signed, { kind: 'inbox', url: inbox })
    else if (route.relays.length)
      await publishWithFailover(signed, route.relays, { fetch: this.#fetch })
  }

  // -- sending ---------------------------------------------------------------------------

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(task)
    this.#lock = run.catch(() => undefined)
    return run
  }

  /** Where `to` can be reached: its inbox (URL agents) and relays (doc, from.relays, given). */
  async #route(
    to: string,
    o: { route: 'direct' | 'relay' | 'auto'; relays: string[] },
  ): Promise<{ inbox?: string; relays: string[]; preference: 'any' | 'ordered' }> {
    const peer = (await this.#storage.get(STORAGE_KEYS.peers + enc(to))) as PeerRecord | undefined
    let inbox: string | undefined
    let docRelays: string[] = []
    let preference: 'any' | 'ordered' = 'ordered'
    if (parseAgentId(to, 'to').kind === 'url') {
      inbox = agentEndpoints(to).inbox
      const doc = await this.#documents.document(to).catch(() => undefined)
      if (doc && !('status' in doc)) {
        inbox = doc.endpoints.inbox
        docRelays = doc.relay?.urls ?? []
        preference = doc.relay?.preference ?? 'any'
      }
    }
    const relays = uniq([...o.relays, ...docRelays, ...(peer?.relays ?? [])])
    return { ...(inbox ? { inbox } : {}), relays, preference }
  }

  async send(to: string, content: Content, options: SendOptions = {}): Promise<SendResult> {
    if (this.#closed) throw new TypeError('send: this agent is closed')
    const recipient = parseAgentId(to, 'to').id
    const givenRelays = uniq(
      (options.relays ?? []).map((r, i) => assertRelayUrl(r, `options.relays[${i}]`)),
    )
    if (givenRelays.length) await this.#rememberRelays(recipient, givenRelays)
    const conversationId = options.conversationId ?? createMessageId(this.#now())
    // Sequence numbers: allocated and persisted before anything goes out.
    const { sequence, isNew } = await this.#exclusive(async () => {
      const k = STORAGE_KEYS.conversations + enc(conversationId)
      const c = (await this.#storage.get(k)) as ConversationRecord | undefined
      const seq = c?.next ?? 0
      await this.#storage.put(k, { peer: c?.peer ?? recipient, next: seq + 1 })
      return { sequence: seq, isNew: c === undefined }
    })
    const parts: BodyPart[] =
      typeof content === 'string' ? [{ type: 'text', text: content }] : [...content.parts]
    const intro = options.authLevel === 0
    if (intro && this.#self.document && (options.phase ?? 'greeting') === 'greeting')
      parts.push({ type: 'data', data: { identity: this.#self.document as unknown as JsonValue } })
    const unsigned = createMessage({
      from: this.id,
      to: recipient,
      conversationId,
      sequence,
      phase: options.phase ?? (isNew ? 'greeting' : 'request'),
      parts,
      contentType:
        typeof content === 'string' ? 'text/plain' : (content.contentType ?? 'application/json'),
      date: this.#now(),
      ...(this.#relays.length ? { relays: this.#relays } : {}),
      ...(options.authLevel !== undefined ? { authLevel: options.authLevel } : {}),
      ...(options.ttlSeconds !== undefined ? { ttlSeconds: options.ttlSeconds } : {}),
    })
    const hmac = intro
      ? await hmacSigner(await this.#token(options.introduction), this.id)
      : undefined
    // Direct: a level-0 introduction is signed by the token only. Relays need an Ed25519
    // signature of the sender (PROFILE §9), so the relay copy carries both.
    const directSigned = await signMessage(unsigned, hmac ?? this.#signer)
    const relaySigned = async () =>
      hmac ? signMessage(unsigned, [this.#signer, hmac]) : directSigned
    const messageId = (unsigned as unknown as Message).message_id
    this.#recipients.set(messageId, recipient)
    if (this.#recipients.size > 10_000)
      this.#recipients.delete(this.#recipients.keys().next().value as string)

    const want = options.route ?? 'auto'
    const route = await this.#route(recipient, { route: want, relays: givenRelays })
    const base = { messageId, conversationId }
    const viaRelay = async (): Promise<SendResult> => {
      const r = await publishWithFailover(await relaySigned(), route.relays, {
        fetch: this.#fetch,
        preference: route.preference,
        ...(options.signal ? { signal: options.signal } : {}),
      })
      void this.#emit('delivered', {
        messageId,
        to: recipient,
        route: 'relay',
        relayUrl: r.relayUrl,
      })
      return { ...base, route: 'relay', relayUrl: r.relayUrl }
    }

    if (want === 'relay' || (want === 'auto' && !route.inbox)) {
      if (route.relays.length === 0) {
        throw new AgentMsgError(
          'not_found',
          `no route to ${recipient}: it has no inbox (not a URL agent) and no relay is known; ` +
            'pass options.relays, pin it with relays, or wait for a message from it',
        )
      }
      return viaRelay()
    }
    if (!route.inbox) {
      throw new AgentMsgError('not_found', `${recipient} has no inbox to deliver to directly`)
    }
    return this.#direct(directSigned, route.inbox, {
      fallback: want === 'auto' && this.#o.fallbackToRelay !== false && route.relays.length > 0,
      viaRelay,
      base,
      ...(options.signal ? { signal: options.signal } : {}),
    })
  }

  /**
   * Deliver to an inbox through the durable outbox. When the first attempt fails retryably
   * (network error, 5xx) and relays are known, the delivery is cancelled (removed from the
   * outbox) and the message published through the relays instead; if no relay takes it, it
   * goes back to the outbox for the normal 24 h of retries.
   */
  async #direct(
    signed: Message,
    inbox: string,
    o: {
      fallback: boolean
      viaRelay: () => Promise<SendResult>
      base: { messageId: string; conversationId: string }
      signal?: AbortSignal
    },
  ): Promise<SendResult> {
    const controller = new AbortController()
    const sender = await this.#httpsSender()
    const onAbort = () => controller.abort(o.signal?.reason)
    o.signal?.addEventListener('abort', onAbort, { once: true })
    const target = { kind: 'inbox' as const, url: inbox }
    let off: () => void = () => {}
    const retried = new Promise<'retry'>((resolve) => {
      off = sender.on('retry', (e) => {
        if (e.message_id === signed.message_id) resolve('retry')
      })
    })
    const delivery = sender.send(signed, target, { signal: controller.signal })
    delivery.catch(() => {})
    try {
      const first = await Promise.race([delivery.then(() => 'delivered' as const), retried])
      if (first === 'delivered') return { ...o.base, route: 'direct' }
      if (!o.fallback) return { ...o.base, route: 'direct', pending: true }
      controller.abort(new Error('falling back to relays'))
      await delivery.catch(() => {})
      try {
        return await o.viaRelay()
      } catch (error) {
        this.#error({ error, message: signed })
        // No relay took it: back to the durable outbox.
        sender.send(signed, target).catch(() => {})
        return { ...o.base, route: 'direct', pending: true }
      }
    } catch (error) {
      if (o.fallback && retryable(error)) return o.viaRelay()
      throw error
    } finally {
      off()
      o.signal?.removeEventListener('abort', onAbort)
    }
  }

  async reply(
    message: Message | ReceivedMessage,
    content: Content,
    options: Omit<SendOptions, 'conversationId'> = {},
  ): Promise<SendResult> {
    const m: Message = isReceived(message) ? message.message : message
    await this.#exclusive(async () => {
      const k = STORAGE_KEYS.conversations + enc(m.conversation_id)
      const c = (await this.#storage.get(k)) as ConversationRecord | undefined
      const next = Math.max(c?.next ?? 0, m.sequence + 1)
      if (!c || c.next !== next) await this.#storage.put(k, { peer: m.from.agent, next })
    })
    return this.send(m.from.agent, content, {
      ...options,
      conversationId: m.conversation_id,
      phase: options.phase ?? 'response',
      relays: uniq([...(options.relays ?? []), ...(m.from.relays ?? [])]),
    })
  }

  async #token(given: string | undefined): Promise<string> {
    if (given !== undefined) {
      await this.#keyStore.addIntroductionToken(given)
      return given
    }
    const held = await this.#storage.list('keys/secret/')
    if (held.length === 1 && typeof held[0]![1] === 'string') return held[0]![1]
    throw new TypeError(
      held.length === 0
        ? 'authLevel 0 needs an introduction token: call introduce(token) or pass options.introduction'
        : 'several introduction tokens are held: pass options.introduction',
    )
  }

  introduce(token: string): Promise<string> {
    return this.#keyStore.addIntroductionToken(token)
  }

  // -- keys ------------------------------------------------------------------------------

  async rotateKey(): Promise<IdentityDocument> {
    const doc = this.#self.document
    if (!doc || isDidKey(this.id)) {
      throw new AgentMsgError(
        'forbidden',
        'only URL agents rotate keys; a did:key agent needs a new identity',
      )
    }
    const keys = await generateKeyPair()
    const next = rotateDocumentKey(doc, { publicKey: keys.publicKey }, { now: this.#now() })
    const fragment = next.keys[next.keys.length - 1]!.key_id
    const self: SelfRecord = {
      ...this.#self,
      active: fragment,
      seeds: { ...this.#self.seeds, [fragment]: base64urlEncode(keys.secretKey) },
      document: next,
    }
    await this.#storage.put(STORAGE_KEYS.self, self as unknown as JsonValue)
    this.#self = self
    this.#keys = keys
    this.#signer = this.#makeSigner()
    return next
  }

  async revokeKey(fragment: string): Promise<IdentityDocument> {
    const doc = this.#self.document
    if (!doc || isDidKey(this.id))
      throw new AgentMsgError('forbidden', 'only URL agents revoke keys')
    if (fragment === this.#self.active)
      throw new TypeError('rotate first: the active key cannot be revoked')
    const next = revokeDocumentKey(doc, fragment)
    const seeds = { ...this.#self.seeds }
    delete seeds[fragment]
    const self: SelfRecord = { ...this.#self, seeds, document: next }
    await this.#storage.put(STORAGE_KEYS.self, self as unknown as JsonValue)
    this.#self = self
    return next
  }

  // -- contacts --------------------------------------------------------------------------

  #makeContacts(): Contacts {
    return {
      pin: async (agent, publicKey, options = {}) => {
        const id = parseAgentId(agent, 'agent').id
        const bytes =
          typeof publicKey === 'string' ? base64urlDecode(publicKey, 'publicKey') : publicKey
        const keyId =
          options.keyId ?? (isDidKey(id) ? didKeyFragment(id) : base64urlEncode(bytes).slice(0, 8))
        await this.#keyStore.pin(id, keyId, bytes)
        await this.#levels.markKnownContact(id, 'pinned')
        if (options.relays?.length) await this.#rememberRelays(id, options.relays)
      },
      list: async () => {
        const byAgent = new Map<string, Contact>()
        const get = (agent: string) => {
          let c = byAgent.get(agent)
          if (!c) byAgent.set(agent, (c = { agent, keys: [], relays: [], knownContact: false }))
          return c
        }
        for (const [, v] of await this.#storage.list('keys/peer/')) {
          const k = v as unknown as {
            agent: string
            fragment: string
            publicKey: string
            source: 'pinned' | 'introduction'
          }
          get(k.agent).keys.push({
            keyId: `${k.agent}#${k.fragment}`,
            source: k.source,
            fingerprint: await fingerprint(k.publicKey),
          })
        }
        for (const [key, v] of await this.#storage.list(STORAGE_KEYS.peers)) {
          get(decodeURIComponent(key.slice(STORAGE_KEYS.peers.length))).relays = (
            v as unknown as PeerRecord
          ).relays
        }
        for (const c of byAgent.values())
          c.knownContact = await this.#levels.isKnownContact(c.agent)
        return [...byAgent.values()]
      },
      remove: async (agent) => {
        await this.#keyStore.remove(agent)
        await this.#levels.forgetContact(agent)
        await this.#storage.delete(STORAGE_KEYS.peers + enc(agent))
      },
      fingerprint,
    }
  }

  // -- internals for ./node.ts ------------------------------------------------------------

  get [INTERNALS](): AgentInternals {
    return {
      storage: this.#storage,
      resolver: this.#resolver,
      documents: this.#documents,
      replayGuard: this.#replay,
      authLevels: this.#levels,
      identityDocument: () => this.#self.document,
      deliverFromInbox: async (message, info) => {
        if (this.#closed) throw new Error('agent closed')
        await this.#accept(message, { ...info, transport: 'https' })
      },
      sendErrorReply: (message, to) => this.#deliverUnsigned(message, to),
      reportError: (e) => this.#error(e),
      onClose: (task) => void this.#closeTasks.push(task),
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#wakeConsumers()
    for (const task of this.#closeTasks.reverse()) await task().catch(() => {})
    await Promise.all(this.#streams.map((s) => s.close()))
    if (this.#sender) await (await this.#sender.catch(() => undefined))?.close()
    for (const it of this.#iterators) it.end()
    this.#iterators.clear()
  }
}

// ---------------------------------------------------------------------------------------------
// Creation

async function loadIdentity(
  storage: Storage,
  options: AgentOptions,
): Promise<{ self: SelfRecord; keys: KeyPair }> {
  const stored = (await storage.get(STORAGE_KEYS.self)) as unknown as SelfRecord | undefined
  const relays = uniq((options.relays ?? []).map((r, i) => assertRelayUrl(r, `relays[${i}]`)))
  if (stored) {
    const given = options.identity?.agentId
    if (given !== undefined && parseAgentId(given, 'identity.agentId').id !== stored.agentId) {
      throw new TypeError(
        `the storage holds the identity of ${stored.agentId}, not ${given}; use another storage`,
      )
    }
    const seed = stored.seeds[stored.active]
    if (typeof seed !== 'string') throw new TypeError('the stored identity has no active key')
    const keys = await keyPairFromSeed(base64urlDecode(seed))
    let self = stored
    // Keep a URL agent's document in step with its configured relays.
    if (self.document && options.relays !== undefined) {
      const now = self.document.relay?.urls ?? []
      if (now.join('\n') !== relays.join('\n')) {
        const { relay: _r, ...rest } = self.document
        const document = (
          relays.length ? { ...rest, relay: { urls: relays, preference: 'any' } } : rest
        ) as IdentityDocument
        self = { ...self, document }
        await storage.put(STORAGE_KEYS.self, self as unknown as JsonValue)
      }
    }
    return { self, keys }
  }
  const o = options.identity ?? {}
  const keys = o.seed ? await keyPairFromSeed(o.seed) : await generateKeyPair()
  let self: SelfRecord
  if (o.agentId !== undefined) {
    const { id, kind } = parseAgentId(o.agentId, 'identity.agentId')
    if (kind !== 'url') throw new TypeError('identity.agentId must be a URL agent id (https://…)')
    const document = o.document
      ? validateIdentityDocument(o.document, { expectedAgentId: id })
      : createIdentityDocument({
          agentId: id,
          publicKey: keys.publicKey,
          ...(o.display ? { display: o.display } : {}),
          ...(relays.length ? { relays } : {}),
        })
    const pk = base64urlEncode(keys.publicKey)
    const active = document.keys.find((k) => k.status === 'active' && k.public_key === pk)
    if (!active) throw new TypeError("identity.document has no active key matching the seed's")
    self = {
      agentId: id,
      active: active.key_id,
      seeds: { [active.key_id]: base64urlEncode(keys.secretKey) },
      document,
    }
  } else {
    const did = didKeyFromPublicKey(keys.publicKey)
    const fragment = didKeyFragment(did)
    self = {
      agentId: did,
      active: fragment,
      seeds: { [fragment]: base64urlEncode(keys.secretKey) },
    }
  }
  await storage.put(STORAGE_KEYS.self, self as unknown as JsonValue)
  return { self, keys }
}

/** @internal the agent, not yet started (node.ts wires its inbox first). */
export async function buildAgent(options: AgentOptions): Promise<AgentImpl> {
  const storage = options.storage ?? memoryStorage()
  const { self: record, keys } = await loadIdentity(storage, options)
  const agent = new AgentImpl(options, storage, record, keys)
  await agent.resumeOutbox()
  return agent
}

/** @internal start streams; close the agent if that fails. */
export async function startAgent(agent: AgentImpl): Promise<void> {
  try {
    await agent.start()
  } catch (error) {
    await agent.close()
    throw error
  }
}

/**
 * Create an agent: load (or create and persist) its identity, subscribe to its relays and
 * stream from them, and resume pending deliveries.
 *
 * @example
 * const alice = await createAgent({ relays: ['https://relay.example'], storage })
 * alice.on('message', async (m) => { await alice.reply(m, `got: ${m.text}`) })
 * await alice.send('https://bob.example', 'hello')
 */
export async function createAgent(options: AgentOptions = {}): Promise<Agent> {
  const agent = await buildAgent(options)
  await startAgent(agent)
  return agent
}

export type { AgentImpl }
