/**
 * An in-memory relay store, for tests and embedders: the semantics of the SQLite store (quotas,
 * duplicates and remembered triples, cursors, expiry, mailbox states) without durability.
 */
import {
  checkRetrieveOptions,
  decidePublish,
  forgetAtOf,
  newSubscription,
  noRoomFor,
  pageOf,
  parseAfter,
  publishMailboxes,
  publishResult,
  type RelayQuota,
  resolveQuota,
  utf8Length,
} from './common.js'
import { type Entry, keyOf, MemoryMailbox, type StoredMessage } from './memory-mailbox.js'
import type {
  MailboxEntry,
  PublishInput,
  RelayStore,
  StorePublishResult,
  Subscription,
} from './types.js'

/** A memory store, with a count of the messages it holds (a topic message once). */
export interface MemoryRelayStore extends RelayStore {
  storedMessages(): number
}

/** An empty in-memory relay store. @default quota PROFILE §9's */
export function memoryRelayStore(options: { quota?: RelayQuota } = {}): MemoryRelayStore {
  const quota = resolveQuota(options.quota)
  const mailboxes = new Map<string, MemoryMailbox>()
  const subscriptions = new Map<string, Subscription>()
  const messages = new Set<StoredMessage>()
  /** Quota bytes of `messages`. */
  let totalBytes = 0
  let lastCursor = 0
  let closed = false

  function open(): void {
    if (closed) throw new Error('relay store is closed')
  }

  function mailboxOf(agent: string): MemoryMailbox {
    let mailbox = mailboxes.get(agent)
    if (mailbox === undefined) mailboxes.set(agent, (mailbox = new MemoryMailbox()))
    return mailbox
  }

  function copy(s: Subscription): Subscription {
    const out: Subscription = { ...s, topics: [...s.topics] }
    if (s.webhook !== undefined) out.webhook = { ...s.webhook }
    return out
  }

  function unref(entry: Entry): void {
    if (--entry.message.refs > 0) return
    messages.delete(entry.message)
    totalBytes -= entry.message.bytes
  }

  const expiredAt = (now: number) => (entry: Entry) => entry.message.expiresAt <= now

  function expireNow(now: number): number {
    let removed = 0
    for (const mailbox of mailboxes.values()) {
      removed += mailbox.removeWhere(expiredAt(now), unref)
      mailbox.forget(now)
    }
    return removed
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

  function publish(input: PublishInput): StorePublishResult[] {
    const key = keyOf(input.messageId, input.from)
    const { from, bytes, receivedAt } = input
    const outcome = decidePublish(publishMailboxes(input), input.skipFull === true, {
      held(agent) {
        const mailbox = mailboxes.get(agent)
        const held = mailbox?.byKey.get(key)
        return held !== undefined ? String(held.cursor) : mailbox?.holds(key, receivedAt) === true
      },
      noRoom(agent) {
        const mailbox = mailboxOf(agent)
        return noRoomFor(quota, bytes, mailbox.usage(), () => mailbox.usage(from))
      },
      dropExpired: (agent) => mailboxOf(agent).removeWhere(expiredAt(receivedAt), unref),
      overCap: () => totalBytes + bytes > quota.totalBytes,
      expire: () => expireNow(receivedAt),
      store(targets) {
        const message: StoredMessage = {
          json: input.json,
          bytes,
          jsonBytes: utf8Length(input.json),
          expiresAt: input.expiresAt,
          forgetAt: forgetAtOf(input),
          refs: targets.length,
        }
        messages.add(message)
        totalBytes += bytes
        return targets.map((agent) => {
          const cursor = ++lastCursor
          mailboxOf(agent).add({ cursor, from, messageId: input.messageId, message })
          return String(cursor)
        })
      },
    })
    return publishResult(outcome)
  }

  return {
    async subscribe(input) {
      open()
      const subscription = newSubscription(input)
      subscriptions.set(subscription.id, subscription)
      mailboxOf(input.agent).state = 'open'
      return copy(subscription)
    },
    async unsubscribe(id, agent) {
      open()
      if (subscriptions.get(id)?.agent !== agent) return false
      subscriptions.delete(id)
      if (![...subscriptions.values()].some((s) => s.agent === agent)) {
        mailboxOf(agent).state = 'closed'
      }
      return true
    },
    async setWebhookVerified(id, verified) {
      open()
      const webhook = subscriptions.get(id)?.webhook
      if (webhook !== undefined) webhook.verified = verified
    },
    async subscriptions(agent) {
      open()
      return [...subscriptions.values()]
        .filter((s) => agent === undefined || s.agent === agent)
        .map(copy)
        .sort((a, b) => a.created - b.created)
    },
    async mailboxState(agent) {
      open()
      return mailboxes.get(agent)?.state ?? 'none'
    },
    async topicSubscribers(topic) {
      open()
      const agents = [...subscriptions.values()].filter((s) => s.topics.includes(topic))
      return [...new Set(agents.map((s) => s.agent))].sort()
    },
    async publish(input) {
      open()
      return publish(input)
    },
    async isDuplicate({ mailboxes: targets, from, messageId, now }) {
      open()
      const key = keyOf(messageId, from)
      return targets.length > 0 && targets.every((a) => mailboxes.get(a)?.holds(key, now) === true)
    },
    async retrieve(agent, opts) {
      open()
      checkRetrieveOptions(opts)
      const entries: MailboxEntry[] = []
      const held = mailboxes.get(agent)?.entries ?? []
      let bytes = 0
      let i = firstAfter(held, parseAfter(opts.after))
      for (; i < held.length && entries.length < opts.limit; i++) {
        const { cursor, from, messageId, message } = held[i]!
        if (message.expiresAt <= opts.now) continue
        if (entries.length > 0 && bytes + message.jsonBytes > opts.maxBytes) break
        bytes += message.jsonBytes
        entries.push({ cursor: String(cursor), from, messageId, json: message.json })
      }
      // Cut when the loop stopped before the last held entry (by limit or bytes).
      return pageOf(entries, opts, i < held.length)
    },
    async ack(agent, messageId, from) {
      open()
      const mailbox = mailboxes.get(agent)
      if (mailbox === undefined) return 0
      if (from === undefined) return mailbox.removeWhere((e) => e.messageId === messageId, unref)
      const entry = mailbox.byKey.get(keyOf(messageId, from))
      return entry === undefined ? 0 : mailbox.removeWhere((e) => e === entry, unref)
    },
    async expire(now) {
      open()
      return expireNow(now)
    },
    async usage(agent, from) {
      open()
      if (agent === undefined) return { messages: messages.size, bytes: totalBytes }
      return mailboxes.get(agent)?.usage(from) ?? { messages: 0, bytes: 0 }
    },
    async checkWritable() {
      open()
    },
    async countMailboxes() {
      open()
      return [...mailboxes.values()].filter((m) => m.state !== 'none').length
    },
    async close() {
      closed = true
    },
    storedMessages: () => messages.size,
  }
}
