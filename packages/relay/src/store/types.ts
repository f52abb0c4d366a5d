/**
 * The relay's storage contract. The embedded default is SQLite (`sqliteRelayStore`); the
 * roadmap's multi-node relay implements the same interface on PostgreSQL, so every method is
 * async and no method assumes one process owns the data.
 *
 * Cursors are opaque strings to clients; stores make them strictly increasing per store in
 * the order entries became visible, so "after cursor" never skips or repeats an entry. The
 * SQLite and memory stores use decimal integer text, never reused (not even after an ack).
 *
 * Writes resolve once durable; reads see what has been written durably (a publish whose promise
 * has not resolved yet may be invisible). Stores do not check mailbox states on publish: the
 * relay asks `mailboxState` / `topicSubscribers` first.
 */

/** A webhook push target of a subscription (PROFILE §9). */
export interface WebhookTarget {
  url: string
  /** True once the challenge was echoed; only verified webhooks receive messages. */
  verified: boolean
}

/** A subscription row. */
export interface Subscription {
  id: string
  agent: string
  topics: string[]
  webhook?: WebhookTarget
  created: number
}

/** What `publish` stores: one message for one or more mailboxes. */
export interface PublishInput {
  /** Owners of the mailboxes (a direct message has one; a topic message every subscriber). */
  mailboxes: string[]
  /** `from.agent` of the message. */
  from: string
  messageId: string
  /** The message as JSON text, trace entry already appended. Stored once, however many mailboxes. */
  json: string
  /**
   * What the message counts against quotas: the bytes of `JCS(message without trace)`
   * (PROFILE §9). Pages are sized by the UTF-8 length of `json` instead.
   */
  bytes: number
  /** When the relay received it (ms). */
  receivedAt: number
  /** When it must be gone: min(receivedAt + retention, date + ttl_seconds) (ms). */
  expiresAt: number
  /**
   * Until when (mailbox, from, messageId) is remembered once its entry was acknowledged or
   * expired: the end of the message's date window, after which a copy is stale anyway
   * (PROFILE §9). @default receivedAt + 8 days + 15 minutes (covers any date the relay accepts)
   */
  forgetAt?: number
  /**
   * A topic publish (PROFILE §9): a mailbox without room is skipped (its result says `full`)
   * instead of failing the whole call, so one subscriber that never reads cannot close a topic.
   * @default false: any mailbox without room fails the call, nothing stored
   */
  skipFull?: boolean
}

/** The outcome of a publish per mailbox (one per distinct mailbox, in the order given). */
export interface StorePublishResult {
  mailbox: string
  /**
   * The entry's cursor; for a duplicate, the existing entry's. Undefined when nothing is held
   * there: a duplicate whose entry was already acknowledged or expired, or a skipped mailbox.
   */
  cursor?: string
  /**
   * True when (mailbox, from, messageId) is held, or remembered after its entry was
   * acknowledged or expired: nothing new was written.
   */
  duplicate: boolean
  /** True when the mailbox had no room and `skipFull` was set: nothing was stored there. */
  full?: boolean
}

/** One entry of a mailbox. */
export interface MailboxEntry {
  cursor: string
  from: string
  messageId: string
  /** The stored JSON text. */
  json: string
}

/** A page of a mailbox. */
export interface MailboxPage {
  entries: MailboxEntry[]
  /** Cursor of the last entry returned, or the `after` given when the page is empty. */
  cursor: string | undefined
  /**
   * Optional: true when the page holds every entry due after `after` at the time of the read
   * (neither `limit` nor `maxBytes` cut it), so a feed need not read again until notified.
   */
  complete?: boolean
}

/** Options of {@link RelayStore.ack}. */
export interface AckOptions {
  /**
   * The acknowledgement has no answer to wait for (a WebSocket ack frame): a store that commits
   * in groups may hold it for the next write's commit, or a few milliseconds, instead of
   * committing it alone. `settled()` still covers it.
   */
  lazy?: boolean
}

/**
 * Thrown by `publish` when a mailbox has no room (the relay answers 503, naming no mailbox):
 * `mailbox` when the mailbox is at its quota, `sender` when this sender holds its share of it.
 */
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

/** Thrown by `publish` when the relay-wide storage cap would be passed (the relay answers 503). */
export class RelayStorageFullError extends Error {
  override readonly name = 'RelayStorageFullError'
  constructor(message = 'the relay storage is full') {
    super(message)
  }
}

/** What `isDuplicate` asks about. */
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
  /** Remove a subscription of `agent`; false when it does not exist or is another agent's. */
  unsubscribe(id: string, agent: string): Promise<boolean>
  /** Mark a subscription's webhook verified (or not); no effect on an unknown id or one without a webhook. */
  setWebhookVerified(id: string, verified: boolean): Promise<void>
  /** All subscriptions (for webhook delivery after a restart), or those of one agent. */
  subscriptions(agent?: string): Promise<Subscription[]>
  /**
   * `open`: the agent has at least one subscription (accepts mail); `closed`: it had one, the
   * last was deleted (keeps what it holds, accepts no new mail); `none`: never subscribed.
   */
  mailboxState(agent: string): Promise<'open' | 'closed' | 'none'>
  /** Agents subscribed to a topic. */
  topicSubscribers(topic: string): Promise<string[]>
  /**
   * Store a message for each mailbox, once per (mailbox, from, messageId): a triple that is
   * held, or was acknowledged or expired before its `forgetAt`, is a duplicate (nothing
   * written). Resolves only when the write is durable (fsync, or a group commit covering it).
   *
   * Quotas (PROFILE §9) count entries held, expired or not (a store may drop expired entries
   * to make room): per mailbox `messages` and `bytes`; per (mailbox, from) the sender's share;
   * relay-wide the `bytes` of the messages stored (a topic message once). Without room in a
   * mailbox, throws {@link MailboxFullError} (nothing stored for any mailbox of the call), or
   * with `skipFull` skips that mailbox. Over the relay-wide cap, throws
   * {@link RelayStorageFullError} (nothing stored). No mailboxes → `[]`, nothing stored.
   */
  publish(input: PublishInput): Promise<StorePublishResult[]>
  /**
   * True when every one of `mailboxes` (at least one) holds the triple or remembers it, so a
   * publish would store nothing: the relay answers such a copy 202 before charging the
   * per-sender limit (PROFILE §9). Reads what is durable, as `retrieve` does.
   */
  isDuplicate(query: DuplicateQuery): Promise<boolean>
  /**
   * Entries of a mailbox after `after`, oldest first, at most `limit` and at most `maxBytes` of
   * JSON (UTF-8 length of the stored text; always at least one entry if any is due), skipping
   * entries expired at `now`.
   * Throws a RangeError when `after` is not in the store's cursor syntax or `limit` < 1 (the
   * relay clamps `limit` to 500 and `maxBytes` to 8 MiB).
   */
  retrieve(
    mailbox: string,
    options: { after?: string; limit: number; maxBytes: number; now: number },
  ): Promise<MailboxPage>
  /**
   * Remove the mailbox's entries with this id (from `from` when given); returns how many. The
   * triples stay remembered until their `forgetAt`.
   */
  ack(mailbox: string, messageId: string, from?: string, options?: AckOptions): Promise<number>
  /**
   * Delete entries expired at `now` (and messages no mailbox references), remembering their
   * triples until their `forgetAt`, and forget triples whose `forgetAt` passed; returns how
   * many entries.
   */
  expire(now: number): Promise<number>
  /**
   * Optional: resolves once every write requested before the call has settled (committed and
   * visible to reads, or failed). For stores whose writes complete asynchronously; the relay
   * waits for it before answering a retrieve, so that an ack sent just before is applied.
   */
  settled?(): Promise<void>
  /**
   * Entries and quota bytes a mailbox holds; with `from`, that sender's share of it; with no
   * mailbox, the relay-wide bytes stored (a topic message once) and messages stored.
   */
  usage(mailbox?: string, from?: string): Promise<{ messages: number; bytes: number }>
  /**
   * Optional, for a store shared by several relay processes: call `listener` with a mailbox
   * whenever another process added entries to it (this process's own publishes may be signalled
   * too, or not: the relay wakes its feeds itself after them), and with `undefined` when such
   * signals may have been lost (a dropped connection), meaning "every mailbox may have
   * changed". Returns the function that stops it.
   * The relay wakes its feeds with it; a feed reads after its own cursor, so a repeated or late
   * signal is harmless. A store used by one process need not implement it.
   */
  watch?(listener: (mailbox: string | undefined) => void): () => void
  /**
   * Optional, for a store shared by several relay processes: the RFC 9421 nonce memory of agent
   * auth (PROFILE §9), so a request replayed to another process is refused too. Records
   * (keyId, nonce) until `expiresAt` unless it is held unexpired at `now`.
   * @returns `'fresh'` (now remembered) or `'replay'`.
   */
  rememberNonce?(
    keyId: string,
    nonce: string,
    expiresAt: number,
    now: number,
  ): Promise<'fresh' | 'replay'>
  /**
   * Optional, for a store shared by several relay processes: elect one process to run `job`
   * (webhook pushes, so each message is pushed once). Calls `listener(true)` when this process
   * becomes the one, `listener(false)` when it stops being it (a dropped connection); at most
   * one process leads at a time. Returns the function that gives the job up.
   */
  lead?(job: string, listener: (leading: boolean) => void): () => void
  /**
   * Optional: resolves once a write could be made now, rejects when it cannot (the SQLite
   * writer is gone, the database is read-only or locked past its busy timeout, the connection is
   * lost). For `GET /readyz`; a store without it is asked a read (`usage()`) instead. Stores
   * nothing.
   */
  checkWritable?(): Promise<void>
  /**
   * Optional: how many mailboxes exist (opened by a subscription, open or closed since), for
   * the relay's metrics. Called on a metrics scrape, so it should be one cheap query.
   */
  countMailboxes?(): Promise<number>
  close(): Promise<void>
}
