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
  /** Byte length of `json` (UTF-8), for quotas and page sizes. */
  bytes: number
  /** When the relay received it (ms). */
  receivedAt: number
  /** When it must be gone: min(receivedAt + retention, date + ttl_seconds) (ms). */
  expiresAt: number
}

/** The outcome of a publish per mailbox (one per distinct mailbox, in the order given). */
export interface PublishResult {
  mailbox: string
  /** The entry's cursor (for a duplicate, the existing entry's). */
  cursor: string
  /** True when (mailbox, from, messageId) was already stored: nothing new was written. */
  duplicate: boolean
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
}

/** Thrown by `publish` when a mailbox is over its quota (the relay answers 503). */
export class MailboxFullError extends Error {
  override readonly name = 'MailboxFullError'
  constructor(
    readonly mailbox: string,
    message = `mailbox ${mailbox} is full`,
  ) {
    super(message)
  }
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
   * Store a message for each mailbox, once per (mailbox, from, messageId). Resolves only when
   * the write is durable (fsync, or a group commit covering it). Throws {@link MailboxFullError}
   * when a mailbox is over quota (then nothing is stored for any mailbox of this call). A mailbox
   * that already holds the message is not counted against its quota (a duplicate result).
   * Quotas count entries held, expired or not: a store may drop a full mailbox's expired
   * entries to make room. No mailboxes → `[]`, nothing stored.
   */
  publish(input: PublishInput): Promise<PublishResult[]>
  /**
   * Entries of a mailbox after `after`, oldest first, at most `limit` and at most `maxBytes` of
   * JSON (always at least one entry if any is due), skipping entries expired at `now`.
   * Throws a RangeError when `after` is not in the store's cursor syntax or `limit` < 1 (the
   * relay clamps `limit` to 500 and `maxBytes` to 8 MiB).
   */
  retrieve(
    mailbox: string,
    options: { after?: string; limit: number; maxBytes: number; now: number },
  ): Promise<MailboxPage>
  /** Remove the mailbox's entries with this id (from `from` when given); returns how many. */
  ack(mailbox: string, messageId: string, from?: string): Promise<number>
  /** Delete entries expired at `now` (and messages no mailbox references); returns how many entries. */
  expire(now: number): Promise<number>
  /**
   * Optional: resolves once every write requested before the call has settled (committed and
   * visible to reads, or failed). For stores whose writes complete asynchronously; the relay
   * waits for it before answering a retrieve, so that an ack sent just before is applied.
   */
  settled?(): Promise<void>
  /** Entries and bytes a mailbox holds (for quotas and tests). */
  usage(mailbox: string): Promise<{ messages: number; bytes: number }>
  close(): Promise<void>
}
