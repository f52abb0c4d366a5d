/**
 * An in-memory relay store, for tests and embedders: the semantics of `sqliteRelayStore`
 * (quotas, duplicates, cursors, expiry, mailbox states), without durability — a write is
 * "durable" as soon as it is applied, and everything is gone with the process.
 */
import {
  checkRetrieveOptions,
  newSubscriptionId,
  parseAfter,
  publishMailboxes,
  resolveQuota,
  uniqueTopics,
  type RelayQuota,
} from './common.js'
import {
  MailboxFullError,
  type MailboxEntry,
  type PublishInput,
  type PublishResult,
  type RelayStore,
  type Subscription,
  type WebhookTarget,
} from './types.js'

export interface MemoryRelayStoreOptions {
  /** Per-mailbox quota (default 10,000 messages or 256 MiB). */
  quota?: RelayQuota
}

/** A memory store, with a count of stored messages for tests. */
export interface MemoryRelayStore extends RelayStore {
  /** Messages held (a topic message counts once, however many mailboxes reference it). */
  storedMessages(): number
}

interface StoredMessage {
  json: string
  bytes: number
  expiresAt: number
  /** Entries referencing it. */
  refs: number
}

interface Entry {
  cursor: number
  mailbox: string
  from: string
  messageId: string
  message: StoredMessage
}

interface Mailbox {
  state: 'none' | 'open' | 'closed'
  /** Ordered by cursor (cursors are only ever appended). */
  entries: Entry[]
  /** By `${messageId}\n${from}`. */
  byKey: Map<string, Entry>
  bytes: number
}

const keyOf = (messageId: string, from: string) => `${messageId}\n${from}`

/** Create an empty in-memory relay store. */
export function memoryRelayStore(options: MemoryRelayStoreOptions = {}): MemoryRelayStore {
  const quota = resolveQuota(options.quota)
  const mailboxes = new Map<string, Mailbox>()
  const subscriptions = new Map<string, Subscription>()
  const messages = new Set<StoredMessage>()
  let lastCursor = 0
  let closed = false

  function assertOpen(): void {
    if (closed) throw new Error('relay store is closed')
  }

  function mailboxOf(agent: string): Mailbox {
    let mailbox = mailboxes.get(agent)
    if (mailbox === undefined) {
      mailbox = { state: 'none', entries: [], byKey: new Map(), bytes: 0 }
      mailboxes.set(agent, mailbox)
    }
    return mailbox
  }

  function copy(subscription: Subscription): Subscription {
    const out: Subscription = { ...subscription, topics: [...subscription.topics] }
    if (subscription.webhook !== undefined) out.webhook = { ...subscription.webhook }
    return out
  }

  function unref(entry: Entry): void {
    if (--entry.message.refs === 0) messages.delete(entry.message)
  }

  /** Remove the entries of `mailbox` that match; returns how many. */
  function removeWhere(mailbox: Mailbox, match: (entry: Entry) => boolean): number {
    let removed = 0
    const kept: Entry[] = []
    for (const entry of mailbox.entries) {
      if (!match(entry)) {
        kept.push(entry)
        continue
      }
      removed++
      mailbox.bytes -= entry.message.bytes
      mailbox.byKey.delete(keyOf(entry.messageId, entry.from))
      unref(entry)
    }
    if (removed > 0) mailbox.entries = kept
    return removed
  }

  function fits(mailbox: Mailbox | undefined, bytes: number): boolean {
    const count = mailbox?.entries.length ?? 0
    const held = mailbox?.bytes ?? 0
    return count + 1 <= quota.messages && held + bytes <= quota.bytes
  }

  /** First index whose cursor is > after. */
  function firstAfter(entries: Entry[], after: number): number {
    let lo = 0
    let hi = entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (entries[mid]!.cursor <= after) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  function publishNow(input: PublishInput, targets: string[]): PublishResult[] {
    // Check every mailbox before writing anything, so a full one leaves all untouched.
    const fresh: string[] = []
    for (const agent of targets) {
      const mailbox = mailboxes.get(agent)
      if (mailbox?.byKey.has(keyOf(input.messageId, input.from))) continue
      if (!fits(mailbox, input.bytes)) {
        // Expired entries do not hold room: drop them and look again.
        if (mailbox === undefined) throw new MailboxFullError(agent)
        removeWhere(mailbox, (entry) => entry.message.expiresAt <= input.receivedAt)
        if (!fits(mailbox, input.bytes)) throw new MailboxFullError(agent)
      }
      fresh.push(agent)
    }
    const message: StoredMessage | undefined =
      fresh.length === 0
        ? undefined
        : { json: input.json, bytes: input.bytes, expiresAt: input.expiresAt, refs: 0 }
    if (message !== undefined) messages.add(message)
    return targets.map((agent) => {
      const mailbox = mailboxOf(agent)
      const key = keyOf(input.messageId, input.from)
      const existing = mailbox.byKey.get(key)
      if (existing !== undefined) {
        return { mailbox: agent, cursor: String(existing.cursor), duplicate: true }
      }
      const entry: Entry = {
        cursor: ++lastCursor,
        mailbox: agent,
        from: input.from,
        messageId: input.messageId,
        message: message!,
      }
      message!.refs++
      mailbox.entries.push(entry)
      mailbox.byKey.set(key, entry)
      mailbox.bytes += input.bytes
      return { mailbox: agent, cursor: String(entry.cursor), duplicate: false }
    })
  }

  return {
    async subscribe(input: {
      agent: string
      topics: string[]
      webhook?: WebhookTarget
      now: number
    }) {
      assertOpen()
      const subscription: Subscription = {
        id: newSubscriptionId(),
        agent: input.agent,
        topics: uniqueTopics(input.topics),
        created: input.now,
      }
      if (input.webhook !== undefined) subscription.webhook = { ...input.webhook }
      subscriptions.set(subscription.id, subscription)
      mailboxOf(input.agent).state = 'open'
      return copy(subscription)
    },

    async unsubscribe(id: string, agent: string) {
      assertOpen()
      const subscription = subscriptions.get(id)
      if (subscription === undefined || subscription.agent !== agent) return false
      subscriptions.delete(id)
      let any = false
      for (const other of subscriptions.values()) {
        if (other.agent === agent) {
          any = true
          break
        }
      }
      if (!any) mailboxOf(agent).state = 'closed'
      return true
    },

    async setWebhookVerified(id: string, verified: boolean) {
      assertOpen()
      const webhook = subscriptions.get(id)?.webhook
      if (webhook !== undefined) webhook.verified = verified
    },

    async subscriptions(agent?: string) {
      assertOpen()
      const out: Subscription[] = []
      for (const subscription of subscriptions.values()) {
        if (agent === undefined || subscription.agent === agent) out.push(copy(subscription))
      }
      return out.sort((a, b) => a.created - b.created)
    },

    async mailboxState(agent: string) {
      assertOpen()
      return mailboxes.get(agent)?.state ?? 'none'
    },

    async topicSubscribers(topic: string) {
      assertOpen()
      const agents = new Set<string>()
      for (const subscription of subscriptions.values()) {
        if (subscription.topics.includes(topic)) agents.add(subscription.agent)
      }
      return [...agents].sort()
    },

    async publish(input: PublishInput) {
      assertOpen()
      return publishNow(input, publishMailboxes(input))
    },

    async retrieve(
      agent: string,
      opts: { after?: string; limit: number; maxBytes: number; now: number },
    ) {
      assertOpen()
      checkRetrieveOptions(opts)
      const after = parseAfter(opts.after)
      const entries: MailboxEntry[] = []
      const held = mailboxes.get(agent)?.entries ?? []
      let bytes = 0
      for (let i = firstAfter(held, after); i < held.length && entries.length < opts.limit; i++) {
        const entry = held[i]!
        if (entry.message.expiresAt <= opts.now) continue
        if (entries.length > 0 && bytes + entry.message.bytes > opts.maxBytes) break
        bytes += entry.message.bytes
        entries.push({
          cursor: String(entry.cursor),
          from: entry.from,
          messageId: entry.messageId,
          json: entry.message.json,
        })
      }
      const last = entries[entries.length - 1]
      return { entries, cursor: last === undefined ? opts.after : last.cursor }
    },

    async ack(agent: string, messageId: string, from?: string) {
      assertOpen()
      const mailbox = mailboxes.get(agent)
      if (mailbox === undefined) return 0
      if (from !== undefined) {
        const entry = mailbox.byKey.get(keyOf(messageId, from))
        return entry === undefined ? 0 : removeWhere(mailbox, (e) => e === entry)
      }
      return removeWhere(mailbox, (entry) => entry.messageId === messageId)
    },

    async expire(now: number) {
      assertOpen()
      let removed = 0
      for (const mailbox of mailboxes.values()) {
        removed += removeWhere(mailbox, (entry) => entry.message.expiresAt <= now)
      }
      return removed
    },

    async usage(agent: string) {
      assertOpen()
      const mailbox = mailboxes.get(agent)
      return { messages: mailbox?.entries.length ?? 0, bytes: mailbox?.bytes ?? 0 }
    },

    async close() {
      closed = true
    },

    storedMessages() {
      return messages.size
    },
  }
}
