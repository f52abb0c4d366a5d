// The relay's storage contract (PROFILE §9). No method assumes one process owns the data, so
// several relay processes may share a store. Cursors strictly increase in the order entries
// became visible, so "after cursor" never skips or repeats one. Writes resolve once durable.
// Publish does not check mailbox states: the relay asks `mailboxState`/`topicSubscribers` first.

/** A webhook push target of a subscription; only verified ones receive messages (PROFILE §9). */
export interface WebhookTarget {
  /** Where messages are POSTed. */
  url: string
  /** Whether it answered the verification challenge. */
  verified: boolean
}

/** An agent's subscription: it opens the agent's mailbox, and its topics' messages go there. */
export interface Subscription {
  /** Its id, `subscription_id` on the wire. */
  id: string
  /** The subscribing agent, whose mailbox it is. */
  agent: string
  /** The topics subscribed to. */
  topics: string[]
  /** Push to a webhook as well. */
  webhook?: WebhookTarget
  /** When it was made, epoch ms. */
  created: number
}

/** One message for one or more mailboxes (a direct message has one, a topic message each subscriber). */
export interface PublishInput {
  /** The mailboxes (agent ids) to store it in. */
  mailboxes: string[]
  /** `from.agent` of the message. */
  from: string
  /** The message's `message_id`. */
  messageId: string
  /** The message as JSON, trace entry appended; stored once however many mailboxes. */
  json: string
  /** Quota bytes: `JCS(message without trace)` (PROFILE §9). Pages count the UTF-8 of `json`. */
  bytes: number
  /** When the relay received it, epoch ms. */
  receivedAt: number
  /** min(receivedAt + retention, date + ttl_seconds). */
  expiresAt: number
  /** Remembered until then once gone. @default receivedAt + PROFILE.relayForgetAfterReceiptMs */
  forgetAt?: number
  /** A topic publish: a mailbox without room is skipped (`full`) instead of failing the call. */
  skipFull?: boolean
  /**
   * The client address bucket the publish came from (PROFILE §9: IPv6 per /48): `bytes` are
   * charged to it, once however many mailboxes, until the message is gone from all. The store
   * keeps only a keyed hash of it (a key stable for the store). None: charged to no bucket.
   */
  bucket?: string
}

/** The outcome of a publish per distinct mailbox, in the order given. */
export interface StorePublishResult {
  /** The mailbox this result is for. */
  mailbox: string
  /** The entry's cursor (a duplicate's: the held one); none when nothing is held there. */
  cursor?: string
  /** The triple is held or remembered: nothing written. */
  duplicate: boolean
  /** No room and `skipFull`: nothing stored there. */
  full?: boolean
}

/** Hooks of {@link RelayStore.publish}. */
export interface PublishHooks {
  /**
   * Told the outcome once the store decided it (duplicates, quotas, cursors), possibly before it
   * is durable, so live streams can push it while the commit runs; never for a refusal. When
   * `publish` then rejects, nothing was stored, and the cursors given here are never given to
   * another entry (a stream that pushed one resumes after it without skipping anything). Every
   * entry of a mailbox with a lower cursor is already committed, or in the same commit.
   */
  decided?(results: StorePublishResult[]): void
}

/** A message held in a mailbox. */
export interface MailboxEntry {
  /** Its position in the mailbox; later entries have greater cursors. */
  cursor: string
  /** `from.agent` of the message. */
  from: string
  /** The message's `message_id`. */
  messageId: string
  /** The message as JSON, trace entry appended. */
  json: string
}

/** One page of a retrieve. */
export interface MailboxPage {
  /** The entries, oldest first. */
  entries: MailboxEntry[]
  /** The last entry's cursor, or the `after` given when the page is empty. */
  cursor: string | undefined
  /** Optional: every entry due after `after` is in the page, so a feed need not read again until notified. */
  complete?: boolean
}

/** Options of {@link RelayStore.ack}. */
export interface AckOptions {
  /** Nobody waits for the answer (a WebSocket ack frame): it may ride with the next commit. */
  lazy?: boolean
}

/** `publish` found no room in a mailbox (`mailbox`), or for this sender's share of it (`sender`). */
export class MailboxFullError extends Error {
  /** The class name, for logs. */
  override readonly name = 'MailboxFullError'
  constructor(
    /** The full mailbox. */
    readonly mailbox: string,
    /** Whether the mailbox is full, or only this sender's share. */
    readonly reason: 'mailbox' | 'sender' = 'mailbox',
    message = reason === 'sender'
      ? `the sender holds its share of mailbox ${mailbox}`
      : `mailbox ${mailbox} is full`,
  ) {
    super(message)
  }
}

/** `publish` would pass the relay-wide storage cap, or its client address bucket's share. */
export class RelayStorageFullError extends Error {
  /** The class name, for logs. */
  override readonly name = 'RelayStorageFullError'
  constructor(
    /** The relay-wide cap, or the client address bucket's share. */
    readonly scope: 'relay' | 'bucket' = 'relay',
    message = scope === 'bucket'
      ? 'the client address bucket holds its share of the relay storage'
      : 'the relay storage is full',
  ) {
    super(message)
  }
}

/** A (mailboxes, from, messageId) triple to look for, {@link RelayStore.isDuplicate}. */
export interface DuplicateQuery {
  /** Each must hold or remember it. */
  mailboxes: string[]
  /** `from.agent` of the message. */
  from: string
  /** The message's `message_id`. */
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
  /** `open`: subscribed; `closed`: its last subscription deleted (keeps what it holds); `none`. */
  mailboxState(agent: string): Promise<'open' | 'closed' | 'none'>
  /** The agents subscribed to `topic`. */
  topicSubscribers(topic: string): Promise<string[]>
  /**
   * Store a message once per (mailbox, from, messageId); a triple held or remembered (until
   * `forgetAt`) is a duplicate. Quotas (PROFILE §9) count held entries, expired or not: per
   * mailbox, per sender of a mailbox, relay-wide and per client address bucket (a topic message
   * once). No room: a {@link MailboxFullError}, nothing stored, unless `skipFull`;
   * {@link RelayStorageFullError} (`scope` relay or bucket), whatever `skipFull`.
   */
  publish(input: PublishInput, hooks?: PublishHooks): Promise<StorePublishResult[]>
  /** Every one of `mailboxes` (at least one) holds or remembers the triple. */
  isDuplicate(query: DuplicateQuery): Promise<boolean>
  /**
   * Entries after `after`, oldest first, at most `limit` and `maxBytes` of JSON (at least one),
   * skipping those expired at `now`. RangeError: a cursor not of this store, or `limit` < 1.
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
  /** Optional, shared store: told of another process's entries (`undefined`: signals lost). */
  watch?(listener: (mailbox: string | undefined) => void): () => void
  /** Optional, shared store: agent-auth nonces (PROFILE §9) of all processes, until `expiresAt`. */
  rememberNonce?(
    keyId: string,
    nonce: string,
    expiresAt: number,
    now: number,
  ): Promise<'fresh' | 'replay'>
  /** Optional, shared store: elect one process for `job` (webhook pushes); returns give-up. */
  lead?(job: string, listener: (leading: boolean) => void): () => void
  /** Optional, for `GET /readyz`: resolves when a write could be made now. Stores nothing. */
  checkWritable?(): Promise<void>
  /** Optional, for metrics: mailboxes opened by a subscription. */
  countMailboxes?(): Promise<number>
  /** Release connections and handles; pending writes settle first. */
  close(): Promise<void>
}
