/** An in-memory relay store for tests and embedders: the SQLite store's semantics, not durable. */
import { randomBytes } from 'node:crypto'
import {
  bucketHasher,
  decidePublish,
  fillPage,
  forgetAtOf,
  newSubscription,
  noRoomFor,
  publishMailboxes,
  publishResult,
  type RelayQuota,
  resolveQuota,
  retrieveAfter,
} from './common.js'
import type { RelayStore, Subscription } from './types.js'

/** A memory store, with a count of the messages it holds (a topic message once). */
export interface MemoryRelayStore extends RelayStore {
  /** Messages held, a topic message once. */
  storedMessages(): number
}

/** A message as stored once, however many mailboxes reference it. */
interface StoredMessage {
  json: string
  /** Quota bytes; `jsonBytes` sizes pages. */
  bytes: number
  jsonBytes: number
  expiresAt: number
  forgetAt: number
  /** The keyed hash of the client address bucket charged for it. */
  bucket: string | null
  /** Entries referencing it. */
  refs: number
}

type Entry = { cursor: number; from: string; messageId: string; message: StoredMessage }

type Usage = { messages: number; bytes: number }
/** The store's calls, answered synchronously (wrapped in promises below). */
type Sync<T> = {
  [K in keyof T]-?: NonNullable<T[K]> extends (...a: infer A) => Promise<infer R>
    ? (...a: A) => R
    : never
}

const keyOf = (messageId: string, from: string) => `${messageId}\n${from}`

/** One mailbox: entries in cursor order, usage per sender, triples remembered after removal. */
class Mailbox {
  state: 'none' | 'open' | 'closed' = 'none'
  entries: Entry[] = []
  readonly byKey = new Map<string, Entry>()
  bytes = 0
  readonly #senders = new Map<string, Usage>()
  /** Until when the triples whose entries are gone are remembered. */
  readonly #seen = new Map<string, number>()

  /** Held, or remembered at `now`. */
  holds(key: string, now: number): boolean {
    return this.byKey.has(key) || (this.#seen.get(key) ?? Number.NEGATIVE_INFINITY) > now
  }

  add(entry: Entry): void {
    this.entries.push(entry)
    this.byKey.set(keyOf(entry.messageId, entry.from), entry)
    this.bytes += entry.message.bytes
    const sender = this.#senders.get(entry.from) ?? { messages: 0, bytes: 0 }
    sender.messages++
    sender.bytes += entry.message.bytes
    this.#senders.set(entry.from, sender)
  }

  /** Remove the entries that match, remembering their triples; `gone` runs for each. */
  removeWhere(match: (entry: Entry) => boolean, gone: (entry: Entry) => void): number {
    const kept: Entry[] = []
    for (const entry of this.entries) {
      if (!match(entry)) {
        kept.push(entry)
        continue
      }
      const key = keyOf(entry.messageId, entry.from)
      this.bytes -= entry.message.bytes
      this.byKey.delete(key)
      const sender = this.#senders.get(entry.from)!
      sender.messages--
      sender.bytes -= entry.message.bytes
      if (sender.messages === 0) this.#senders.delete(entry.from)
      this.#seen.set(key, Math.max(this.#seen.get(key) ?? 0, entry.message.forgetAt))
      gone(entry)
    }
    const removed = this.entries.length - kept.length
    if (removed > 0) this.entries = kept
    return removed
  }

  forget(now: number): void {
    for (const [key, until] of this.#seen) if (until <= now) this.#seen.delete(key)
  }

  usage(from?: string): Usage {
    if (from === undefined) return { messages: this.entries.length, bytes: this.bytes }
    return { messages: 0, bytes: 0, ...this.#senders.get(from) }
  }
}

/** An empty in-memory relay store. @default quota PROFILE §9's */
export function memoryRelayStore(options: { quota?: RelayQuota } = {}): MemoryRelayStore {
  const quota = resolveQuota(options.quota)
  const mailboxes = new Map<string, Mailbox>()
  const subscriptions = new Map<string, Subscription>()
  const messages = new Set<StoredMessage>()
  /** Quota bytes of `messages`, in all and per bucket hash (PROFILE §9). */
  let totalBytes = 0
  const bucketBytes = new Map<string, number>()
  // The memory store lives as long as its process: a key of its own is stable enough.
  const hashBucket = bucketHasher(randomBytes(32))
  const charge = ({ bucket, bytes }: StoredMessage, sign: 1 | -1) => {
    totalBytes += sign * bytes
    if (bucket === null) return
    const left = (bucketBytes.get(bucket) ?? 0) + sign * bytes
    if (left > 0) bucketBytes.set(bucket, left)
    else bucketBytes.delete(bucket)
  }
  let lastCursor = 0
  let closed = false

  const mailboxOf = (agent: string) => {
    let mailbox = mailboxes.get(agent)
    if (mailbox === undefined) mailboxes.set(agent, (mailbox = new Mailbox()))
    return mailbox
  }
  const unref = (entry: Entry) => {
    if (--entry.message.refs > 0) return
    messages.delete(entry.message)
    charge(entry.message, -1)
  }
  const expiredAt = (now: number) => (entry: Entry) => entry.message.expiresAt <= now
  const expire = (now: number) => {
    let removed = 0
    for (const mailbox of mailboxes.values()) {
      removed += mailbox.removeWhere(expiredAt(now), unref)
      mailbox.forget(now)
    }
    return removed
  }

  /** First index of `entries` whose cursor is > after. */
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

  function* due(entries: Entry[], start: number, now: number) {
    for (let i = start; i < entries.length; i++) {
      const { cursor, from, messageId, message: m } = entries[i]!
      if (m.expiresAt > now)
        yield { cursor: `${cursor}`, from, messageId, json: m.json, size: m.jsonBytes }
    }
  }

  const store: Sync<Omit<RelayStore, 'close' | 'settled' | 'watch' | 'rememberNonce' | 'lead'>> = {
    subscribe(input) {
      const subscription = newSubscription(input)
      subscriptions.set(subscription.id, subscription)
      mailboxOf(input.agent).state = 'open'
      return structuredClone(subscription)
    },
    unsubscribe(id, agent) {
      if (subscriptions.get(id)?.agent !== agent) return false
      subscriptions.delete(id)
      if (![...subscriptions.values()].some((s) => s.agent === agent)) {
        mailboxOf(agent).state = 'closed'
      }
      return true
    },
    setWebhookVerified(id, verified) {
      const webhook = subscriptions.get(id)?.webhook
      if (webhook !== undefined) webhook.verified = verified
    },
    subscriptions: (agent) =>
      [...subscriptions.values()]
        .filter((s) => agent === undefined || s.agent === agent)
        .map((s) => structuredClone(s))
        .sort((a, b) => a.created - b.created),
    mailboxState: (agent) => mailboxes.get(agent)?.state ?? 'none',
    topicSubscribers(topic) {
      const agents = [...subscriptions.values()].filter((s) => s.topics.includes(topic))
      return [...new Set(agents.map((s) => s.agent))].sort()
    },
    publish(input) {
      const key = keyOf(input.messageId, input.from)
      const { from, bytes, receivedAt } = input
      const bucket = hashBucket(input.bucket)
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
        overBucket: () =>
          bucket !== null && (bucketBytes.get(bucket) ?? 0) + bytes > quota.bucketBytes,
        expire: () => expire(receivedAt),
        store(targets) {
          const { json, expiresAt } = input
          const jsonBytes = Buffer.byteLength(json, 'utf8')
          const forgetAt = forgetAtOf(input)
          const refs = targets.length
          const message = { json, bytes, jsonBytes, expiresAt, forgetAt, bucket, refs }
          messages.add(message)
          charge(message, 1)
          return targets.map((agent) => {
            const cursor = ++lastCursor
            mailboxOf(agent).add({ cursor, from, messageId: input.messageId, message })
            return String(cursor)
          })
        },
      })
      return publishResult(outcome)
    },
    isDuplicate({ mailboxes: targets, from, messageId, now }) {
      const key = keyOf(messageId, from)
      return targets.length > 0 && targets.every((a) => mailboxes.get(a)?.holds(key, now) === true)
    },
    retrieve(agent, opts) {
      const after = retrieveAfter(opts)
      const held = mailboxes.get(agent)?.entries ?? []
      return fillPage(due(held, firstAfter(held, after), opts.now), opts)
    },
    ack(agent, messageId, from) {
      const mailbox = mailboxes.get(agent)
      if (mailbox === undefined) return 0
      if (from === undefined) return mailbox.removeWhere((e) => e.messageId === messageId, unref)
      const entry = mailbox.byKey.get(keyOf(messageId, from))
      return entry === undefined ? 0 : mailbox.removeWhere((e) => e === entry, unref)
    },
    expire,
    usage(agent, from) {
      if (agent === undefined) return { messages: messages.size, bytes: totalBytes }
      return mailboxes.get(agent)?.usage(from) ?? { messages: 0, bytes: 0 }
    },
    checkWritable() {},
    countMailboxes: () => [...mailboxes.values()].filter((m) => m.state !== 'none').length,
  }
  // Every call rejects once closed; results are promises as the contract has them.
  const guarded = Object.fromEntries(
    Object.entries(store).map(([name, f]) => [
      name,
      async (...args: unknown[]) => {
        if (closed) throw new Error('relay store is closed')
        return (f as (...a: unknown[]) => unknown)(...args)
      },
    ]),
  ) as unknown as RelayStore
  return {
    ...guarded,
    close: async () => {
      closed = true
    },
    storedMessages: () => messages.size,
  }
}
