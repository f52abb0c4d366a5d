/**
 * An in-memory relay store, for tests and embedders: the semantics of `sqliteRelayStore`
 * (quotas, duplicates and remembered triples, cursors, expiry, mailbox states), without durability — a write is
 * "durable" as soon as it is applied, and everything is gone with the process.
 */
import {
  checkRetrieveOptions,
  forgetAtOf,
  newSubscriptionId,
  parseAfter,
  publishMailboxes,
  type RelayQuota,
  resolveQuota,
  uniqueTopics,
  utf8Length,
} from './common.js'
import { type Entry, keyOf, MemoryMailbox, type StoredMessage } from './memory-mailbox.js'
import {
  type DuplicateQuery,
  type MailboxEntry,
  MailboxFullError,
  type MailboxPage,
  type PublishInput,
  RelayStorageFullError,
  type RelayStore,
  type StorePublishResult,
  type Subscription,
  type WebhookTarget,
} from './types.js'

export interface MemoryRelayStoreOptions {
  /** Quotas (default: 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB). */
  quota?: RelayQuota
}

/** A memory store, with a count of stored messages for tests. */
export interface MemoryRelayStore extends RelayStore {
  /** Messages held (a topic message counts once, however many mailboxes reference it). */
  storedMessages(): number
}

/** Create an empty in-memory relay store. */
export function memoryRelayStore(options: MemoryRelayStoreOptions = {}): MemoryRelayStore {
  const quota = resolveQuota(options.quota)
  const mailboxes = new Map<string, MemoryMailbox>()
  const subscriptions = new Map<string, Subscription>()
  const messages = new Set<StoredMessage>()
  /** Quota bytes of `messages` (the relay-wide cap counts a topic message once). */
  let totalBytes = 0
  let lastCursor = 0
  let closed = false

  function assertOpen(): void {
    if (closed) throw new Error('relay store is closed')
  }

  function mailboxOf(agent: string): MemoryMailbox {
    let mailbox = mailboxes.get(agent)
    if (mailbox === undefined) {
      mailbox = new MemoryMailbox()
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
    if (--entry.message.refs === 0) {
      messages.delete(entry.message)
      totalBytes -= entry.message.bytes
    }
  }

  function expireNow(now: number): number {
    let removed = 0
    for (const mailbox of mailboxes.values()) {
      removed += mailbox.removeWhere((entry) => entry.message.expiresAt <= now, unref)
      mailbox.forget(now)
    }
    return removed
  }

  /** Why `agent`'s mailbox has no room for `input`, after dropping its expired entries. */
  function noRoom(agent: string, input: PublishInput): 'mailbox' | 'sender' | undefined {
    const mailbox = mailboxOf(agent)
    if (mailbox.noRoom(input.from, input.bytes, quota) === undefined) return undefined
    // Expired entries do not hold room: drop them and look again.
    mailbox.removeWhere((entry) => entry.message.expiresAt <= input.receivedAt, unref)
    return mailbox.noRoom(input.from, input.bytes, quota)
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

  function publishNow(input: PublishInput, targets: string[]): StorePublishResult[] {
    const key = keyOf(input.messageId, input.from)
    // Expired messages do not hold room under the relay-wide cap either.
    if (totalBytes + input.bytes > quota.totalBytes) expireNow(input.receivedAt)
    // Decide every mailbox before storing anything, so a refusal stores nothing.
    const results: StorePublishResult[] = []
    const fresh: StorePublishResult[] = []
    for (const agent of targets) {
      const mailbox = mailboxes.get(agent)
      if (mailbox?.holds(key, input.receivedAt)) {
        const existing = mailbox.byKey.get(key)
        const result: StorePublishResult = { mailbox: agent, duplicate: true }
        if (existing !== undefined) result.cursor = String(existing.cursor)
        results.push(result)
        continue
      }
      const reason = noRoom(agent, input)
      if (reason !== undefined) {
        if (!input.skipFull) throw new MailboxFullError(agent, reason)
        results.push({ mailbox: agent, duplicate: false, full: true })
        continue
      }
      const result: StorePublishResult = { mailbox: agent, duplicate: false }
      fresh.push(result)
      results.push(result)
    }
    if (fresh.length === 0) return results
    if (totalBytes + input.bytes > quota.totalBytes) throw new RelayStorageFullError()
    const message: StoredMessage = {
      json: input.json,
      bytes: input.bytes,
      jsonBytes: utf8Length(input.json),
      expiresAt: input.expiresAt,
      forgetAt: forgetAtOf(input),
      refs: 0,
    }
    messages.add(message)
    totalBytes += input.bytes
    for (const result of fresh) {
      const entry: Entry = {
        cursor: ++lastCursor,
        from: input.from,
        messageId: input.messageId,
        message,
      }
      message.refs++
      mailboxOf(result.mailbox).add(entry)
      result.cursor = String(entry.cursor)
    }
    return results
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

    async isDuplicate(query: DuplicateQuery) {
      assertOpen()
      const key = keyOf(query.messageId, query.from)
      return (
        query.mailboxes.length > 0 &&
        query.mailboxes.every((agent) => mailboxes.get(agent)?.holds(key, query.now) === true)
      )
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
      let i = firstAfter(held, after)
      for (; i < held.length && entries.length < opts.limit; i++) {
        const entry = held[i]!
        if (entry.message.expiresAt <= opts.now) continue
        if (entries.length > 0 && bytes + entry.message.jsonBytes > opts.maxBytes) break
        bytes += entry.message.jsonBytes
        entries.push({
          cursor: String(entry.cursor),
          from: entry.from,
          messageId: entry.messageId,
          json: entry.message.json,
        })
      }
      const last = entries[entries.length - 1]
      const page: MailboxPage = { entries, cursor: last === undefined ? opts.after : last.cursor }
      // Complete: the loop ran past the last held entry (not stopped by limit or bytes).
      if (last !== undefined && i >= held.length && entries.length < opts.limit)
        page.complete = true
      return page
    },

    async ack(agent: string, messageId: string, from?: string) {
      assertOpen()
      const mailbox = mailboxes.get(agent)
      if (mailbox === undefined) return 0
      if (from !== undefined) {
        const entry = mailbox.byKey.get(keyOf(messageId, from))
        return entry === undefined ? 0 : mailbox.removeWhere((e) => e === entry, unref)
      }
      return mailbox.removeWhere((entry) => entry.messageId === messageId, unref)
    },

    async expire(now: number) {
      assertOpen()
      return expireNow(now)
    },

    async usage(agent?: string, from?: string) {
      assertOpen()
      if (agent === undefined) return { messages: messages.size, bytes: totalBytes }
      return mailboxes.get(agent)?.usage(from) ?? { messages: 0, bytes: 0 }
    },

    async checkWritable() {
      // Memory always takes a write while open.
      assertOpen()
    },

    async countMailboxes() {
      assertOpen()
      let n = 0
      for (const mailbox of mailboxes.values()) if (mailbox.state !== 'none') n++
      return n
    },

    async close() {
      closed = true
    },

    storedMessages() {
      return messages.size
    },
  }
}
