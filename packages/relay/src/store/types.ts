/**
 * The relay's storage contract (PROFILE §9). Every method is async and none assumes one process
 * owns the data, so a store may be shared by several relay processes (PostgreSQL).
 *
 * Cursors are opaque to clients; a store makes them strictly increasing in the order entries
 * became visible, so "after cursor" never skips or repeats an entry. Writes resolve once
 * durable; reads see what is durable. Stores do not check mailbox states on publish: the relay
 * asks `mailboxState` / `topicSubscribers` first.
 */

/** A webhook push target of a subscription; only verified ones receive messages (PROFILE §9). */
export interface WebhookTarget {
  url: string
  verified: boolean
}

export interface Subscription {
  id: string
  agent: string
  topics: string[]
  webhook?: WebhookTarget
  created: number
}

/** One message for one or more mailboxes (a direct message has one, a topic message each subscriber). */
export interface PublishInput {
  mailboxes: string[]
  /** `from.agent` of the message. */
  from: string
  messageId: string
  /** The message as JSON, trace entry appended; stored once however many mailboxes. */
  json: string
  /** Quota bytes: `JCS(message without trace)` (PROFILE §9). Pages count the UTF-8 of `json`. */
  bytes: number
  receivedAt: number
  /** min(receivedAt + retention, date + ttl_seconds). */
  expiresAt: number
  /**
   * Until when (mailbox, from, messageId) is remembered once its entry is gone: the end of the
   * message's date window. @default receivedAt + PROFILE.relayForgetAfterReceiptMs
   */
  forgetAt?: number
  /** A topic publish: a mailbox without room is skipped (`full`) instead of failing the call. */
  skipFull?: boolean
}

/** The outcome of a publish per distinct mailbox, in the order given. */
export interface StorePublishResult {
  mailbox: string
  /** The entry's cursor (a duplicate's: the held one); none when nothing is held there. */
  cursor?: string
  /** The triple is held or remembered: nothing written. */
  duplicate: boolean
  /** No room and `skipFull`: nothing stored there. */
  full?: boolean
}

export interface MailboxEntry {
  cursor: string
  from: string
  messageId: string
  json: string
}

export interface MailboxPage {
  entries: MailboxEntry[]
  /** The last entry's cursor, or the `after` given when the page is empty. */
  cursor: string | undefined
  /** Optional: every entry due after `after` is in the page, so a feed need not read again until notified. */
  complete?: boolean
}

export interface AckOptions {
  /**
   * Nobody waits for the answer (a WebSocket ack frame): a store that commits in groups may hold
   * it for the next write's commit. `settled()` still covers it.
   */
  lazy?: boolean
}

/** `publish` found no room in a mailbox (`mailbox`), or for this sender's share of it (`sender`). */
export class MailboxFullError extends Error {
  override readonly name = 'MailboxFullError'
  constructor(
    readonly mailbox: string,
    readonly reason: 'mailbox' | 'sender' = 'mailbox',
    message = reason === 'sender'
      ? `the sender holds its share of mailbox ${mailbox}`
      : `mailbox ${mailbox} is full`,
  ) {
    super(message)
  }
}

/** `publish` would pass the relay-wide storage cap. */
export class RelayStorageFullError extends Error {
  override readonly name = 'RelayStorageFullError'
  constructor(message = 'the relay storage is full') {
    super(message)
  }
}

export interface DuplicateQuery {
  mailboxes: string[]
  from: string
  messageId: string
  /** Remembered triples whose `forgetAt` has passed are forgotten. */
  now: number
}

/** Storage behind the relay. */
export interface RelayStore {
  /** Add a subscription; opens the owner's mailbox. */
  subscribe(input: {
    agent: string
    topics: string[]
    webhook?: WebhookTarget
    now: number
  }): Promise<Subscription>
  /** False when it does not exist or is another agent's. */
  unsubscribe(id: string, agent: string): Promise<boolean>
  /** No effect on an unknown id or one without a webhook. */
  setWebhookVerified(id: string, verified: boolean): Promise<void>
  /** All subscriptions, or those of one agent. */
  subscriptions(agent?: string): Promise<Subscription[]>
  /**
   * `open`: it has a subscription; `closed`: its last was deleted (keeps what it holds, takes no
   * new mail); `none`: never subscribed.
   */
  mailboxState(agent: string): Promise<'open' | 'closed' | 'none'>
  topicSubscribers(topic: string): Promise<string[]>
  /**
   * Store a message once per (mailbox, from, messageId): a triple held, or gone before its
   * `forgetAt`, is a duplicate. Resolves once durable. Quotas (PROFILE §9) count entries held,
   * expired or not: per mailbox, per (mailbox, from) the sender's share, relay-wide the bytes
   * stored (a topic message once). Without room throws {@link MailboxFullError} (nothing stored
   * anywhere) unless `skipFull`; over the relay-wide cap throws {@link RelayStorageFullError}.
   */
  publish(input: PublishInput): Promise<StorePublishResult[]>
  /** Every one of `mailboxes` (at least one) holds or remembers the triple. */
  isDuplicate(query: DuplicateQuery): Promise<boolean>
  /**
   * Entries after `after`, oldest first, at most `limit` and `maxBytes` of JSON (at least one
   * when one is due), skipping those expired at `now`. A RangeError for a cursor not of this
   * store or `limit` < 1.
   */
  retrieve(
    mailbox: string,
    options: { after?: string; limit: number; maxBytes: number; now: number },
  ): Promise<MailboxPage>
  /** Remove the mailbox's entries with this id (from `from` when given); returns how many. */
  ack(mailbox: string, messageId: string, from?: string, options?: AckOptions): Promise<number>
  /** Delete entries expired at `now`, forget triples past their `forgetAt`; returns entries removed. */
  expire(now: number): Promise<number>
  /** Optional: resolves once every write asked for before the call has settled. */
  settled?(): Promise<void>
  /** A mailbox's entries and quota bytes; with `from` that sender's share; with neither, relay-wide. */
  usage(mailbox?: string, from?: string): Promise<{ messages: number; bytes: number }>
  /**
   * Optional, for a store shared by several relay processes: `listener(mailbox)` when another
   * process added entries there, `listener(undefined)` when signals may have been lost. Returns
   * the function that stops it.
   */
  watch?(listener: (mailbox: string | undefined) => void): () => void
  /**
   * Optional, shared store: the agent-auth nonce memory (PROFILE §9) of every process. Records
   * (keyId, nonce) until `expiresAt` unless held unexpired at `now`.
   */
  rememberNonce?(
    keyId: string,
    nonce: string,
    expiresAt: number,
    now: number,
  ): Promise<'fresh' | 'replay'>
  /**
   * Optional, shared store: elect one process for `job` (webhook pushes, so each message is
   * pushed once); `listener(true)` when this one leads, `false` when it stops. Returns the
   * function that gives the job up.
   */
  lead?(job: string, listener: (leading: boolean) => void): () => void
  /** Optional, for `GET /readyz`: resolves when a write could be made now. Stores nothing. */
  checkWritable?(): Promise<void>
  /** Optional, for metrics: mailboxes opened by a subscription. */
  countMailboxes?(): Promise<number>
  close(): Promise<void>
}
