// Mailbox feeds: the backlog after a cursor, then live entries, no gap, no duplicate. A feed
// listens first, then reads after its own cursor; a notification only means "read again".
// Cursors grow in the order entries became visible, so nothing stored meanwhile is missed.
import { PROFILE } from '@agentmsg/core'
import type { MailboxEntry, RelayStore } from '../store/types.js'
import type { Uncommitted } from './uncommitted.js'

/** Where a feed sends a mailbox's entries (an SSE stream, a WebSocket, a webhook). */
export interface FeedSink {
  /** Never blocks. */
  send(entry: MailboxEntry): void
  /** True when the sink can take more, false when it is gone (the feed stops). */
  ready(): Promise<boolean>
}

export type Feed = { close(): void }

/** In-process "something new in this mailbox" signals. */
export class Notifier {
  readonly #listeners = new Map<string, Set<() => void>>()

  /** Listen for new entries of `mailbox`; returns the function that stops listening. */
  on(mailbox: string, listener: () => void): () => void {
    const set = this.#listeners.get(mailbox) ?? new Set()
    this.#listeners.set(mailbox, set.add(listener))
    return () => {
      set.delete(listener)
      if (set.size === 0 && this.#listeners.get(mailbox) === set) this.#listeners.delete(mailbox)
    }
  }

  notify(mailbox: string): void {
    for (const listener of [...(this.#listeners.get(mailbox) ?? [])]) listener()
  }

  /** Wake every listener: signals from other relay processes may have been lost. */
  notifyAll(): void {
    for (const mailbox of [...this.#listeners.keys()]) this.notify(mailbox)
  }

  /** Mailboxes with listeners. */
  get size(): number {
    return this.#listeners.size
  }
}

export interface FeedContext {
  store: RelayStore
  notifier: Notifier
  now: () => number
  onError: (error: unknown) => void
  /** Entries decided, not yet committed: pushed after the committed ones. */
  uncommitted?: Uncommitted
  /** Told how many entries each read handed to the sink (metrics). */
  delivered?: (count: number) => void
}

/** Start a feed of `mailbox` after `after` into `sink`. */
export function startFeed(
  ctx: FeedContext,
  mailbox: string,
  after: string | undefined,
  sink: FeedSink,
  onClose?: (error?: unknown) => void,
): Feed {
  let cursor = after
  let dirty = true
  let running = false
  let closed = false

  const close = (error?: unknown) => {
    if (closed) return
    closed = true
    off()
    onClose?.(error)
  }

  const run = async () => {
    running = true
    try {
      while (dirty && !closed) {
        dirty = false
        for (;;) {
          if (!(await sink.ready())) return close()
          if (closed) return
          // At most one stream's unsent bytes per read (PROFILE §9).
          const o = { limit: PROFILE.pageLimit, maxBytes: PROFILE.maxMessageBytes, now: ctx.now() }
          // Taken before the read: one committed meanwhile is in the read, and a newer one wakes us.
          const early = ctx.uncommitted?.after(mailbox, cursor, o) ?? []
          const page = await ctx.store.retrieve(mailbox, { after: cursor, ...o })
          const entries = page.entries.length > 0 ? page.entries : early
          if (entries.length > 0) ctx.delivered?.(entries.length)
          if (closed) return
          for (const entry of entries) {
            sink.send(entry)
            cursor = entry.cursor
          }
          // A complete page read everything due: the next notification wakes the feed again
          // (else a second, empty read per pushed entry). Uncommitted ones left: read on.
          const more = (ctx.uncommitted?.after(mailbox, cursor, { ...o, limit: 1 }).length ?? 0) > 0
          if (!more && (page.entries.length === 0 || page.complete === true)) break
        }
      }
    } catch (error) {
      // A RangeError is a cursor the store does not know: the client's mistake, not ours.
      if (!(error instanceof RangeError)) ctx.onError(error)
      close(error)
    } finally {
      running = false
    }
  }

  const wake = () => {
    dirty = true
    if (!running && !closed) void run()
  }

  // Listen before the first read: nothing stored from now on can be missed.
  const off = ctx.notifier.on(mailbox, wake)
  wake()
  return { close: () => close() }
}
