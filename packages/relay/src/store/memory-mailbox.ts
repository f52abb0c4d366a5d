/**
 * One mailbox of the in-memory relay store: its entries in cursor order, its usage per sender
 * (PROFILE §9: one sender holds at most a share), and the (from, message_id) pairs it remembers
 * after their entries were acknowledged or expired.
 */

/** A message as stored once, however many mailboxes reference it. */
export interface StoredMessage {
  json: string
  /** Quota bytes. */
  bytes: number
  /** UTF-8 length of `json`, for page sizes. */
  jsonBytes: number
  expiresAt: number
  forgetAt: number
  /** Entries referencing it. */
  refs: number
}

export interface Entry {
  cursor: number
  from: string
  messageId: string
  message: StoredMessage
}

interface Usage {
  messages: number
  bytes: number
}

export const keyOf = (messageId: string, from: string) => `${messageId}\n${from}`

export class MemoryMailbox {
  state: 'none' | 'open' | 'closed' = 'none'
  /** Ordered by cursor (only ever appended). */
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
    const sender = this.#senders.get(entry.from)
    if (sender === undefined) {
      this.#senders.set(entry.from, { messages: 1, bytes: entry.message.bytes })
    } else {
      sender.messages++
      sender.bytes += entry.message.bytes
    }
  }

  /** Remove the entries that match, remembering their triples; `gone` runs for each. */
  removeWhere(match: (entry: Entry) => boolean, gone: (entry: Entry) => void): number {
    let removed = 0
    const kept: Entry[] = []
    for (const entry of this.entries) {
      if (!match(entry)) {
        kept.push(entry)
        continue
      }
      removed++
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
    if (removed > 0) this.entries = kept
    return removed
  }

  forget(now: number): void {
    for (const [key, until] of this.#seen) if (until <= now) this.#seen.delete(key)
  }

  usage(from?: string): Usage {
    if (from === undefined) return { messages: this.entries.length, bytes: this.bytes }
    const sender = this.#senders.get(from)
    return { messages: sender?.messages ?? 0, bytes: sender?.bytes ?? 0 }
  }
}
