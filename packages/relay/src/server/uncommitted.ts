/**
 * Entries a store decided but has not committed yet (PublishHooks.decided): live streams push
 * them while the commit runs; the publisher's 202 still waits for it (PROFILE §9 durability).
 * A feed reads its store first, then these, so cursors still come in order (docs/protocol.md).
 */
import type { MailboxEntry, PublishHooks } from '../store/types.js'
import type { Notifier } from './feed.js'

type Held = MailboxEntry & { expiresAt: number }

/** Cursors are decimal integers without leading zeros (common.ts `retrieveAfter`). */
export const before = (a: string, b: string) =>
  a.length < b.length || (a.length === b.length && a < b)

export class Uncommitted {
  readonly #held = new Map<string, Held[]>()
  constructor(
    readonly notifier: Notifier,
    /** A commit failed after its entries were pushed: the publisher retries (see docs). */
    readonly lost: (error: unknown) => void,
  ) {}

  /** The hooks of one publish, and `done` to call once it settled (`error` when it failed). */
  track(message: Omit<Held, 'cursor'>): PublishHooks & { done(error?: unknown): boolean } {
    let added: Array<[string, Held]> = []
    return {
      decided: (results) => {
        for (const r of results) {
          if (r.duplicate || r.full || r.cursor === undefined) continue
          const entry = { ...message, cursor: r.cursor }
          const list = this.#held.get(r.mailbox) ?? []
          list.push(entry)
          this.#held.set(r.mailbox, list)
          added.push([r.mailbox, entry])
        }
        for (const [mailbox] of added) this.notifier.notify(mailbox)
      },
      /** True when its entries were pushed before the commit. */
      done: (error) => {
        const pushed = added.length > 0
        for (const [mailbox, entry] of added) {
          const list = this.#held.get(mailbox)?.filter((e) => e !== entry) ?? []
          if (list.length > 0) this.#held.set(mailbox, list)
          else this.#held.delete(mailbox)
        }
        added = []
        if (pushed && error !== undefined) this.lost(error)
        return pushed
      },
    }
  }

  /** `mailbox`'s entries after `cursor` due at `now`, at most `limit`/`maxBytes`. */
  after(
    mailbox: string,
    cursor: string | undefined,
    o: { limit: number; maxBytes: number; now: number },
  ) {
    const entries: MailboxEntry[] = []
    let bytes = 0
    // In cursor order already: one batch is told at a time, its outcomes in cursor order.
    for (const { expiresAt, ...entry } of this.#held.get(mailbox) ?? []) {
      if (expiresAt <= o.now || (cursor !== undefined && !before(cursor, entry.cursor))) continue
      bytes += entry.json.length
      if (entries.length >= o.limit || (entries.length > 0 && bytes > o.maxBytes)) break
      entries.push(entry)
    }
    return entries
  }
}
