/**
 * Removing entries from the SQLite relay store (acknowledgements, expiry), on the writer's
 * connection inside its transaction. Every removal keeps the counters the quotas read in step
 * (per mailbox, per sender of a mailbox, relay-wide) and remembers each removed entry's
 * (mailbox, from, message_id) until its message's `forget_at`, so that a copy published again
 * is a duplicate (PROFILE §9: dedupe after ack or expiry).
 */
import type Database from 'better-sqlite3'

/** The entries a removal matches: a condition on `entries e` joined with `messages m`. */
type Condition = string

interface GroupRow {
  mailbox: string
  from_agent: string
  n: number
  b: number
}

/** Removes the entries a condition matches; returns how many. */
export type Removal = (...params: unknown[]) => number

export interface SqliteRemovals {
  /** Entries of a mailbox with this id, from this sender. */
  ackFrom: Removal
  /** Entries of a mailbox with this id, any sender. */
  ackAny: Removal
  /** A mailbox's entries expired at `now` (params: mailbox, now). */
  expiredIn: Removal
  /** Every entry expired at `now`, and triples whose window passed; returns entries removed. */
  expire(now: number): number
}

/** Prepare the removals on `db`. */
export function sqliteRemovals(db: Database.Database): SqliteRemovals {
  const subtractMailbox = db.prepare(
    'UPDATE mailboxes SET messages = messages - ?, bytes = bytes - ? WHERE agent = ?',
  )
  const subtractSender = db.prepare(
    'UPDATE senders SET messages = messages - ?, bytes = bytes - ? ' +
      'WHERE mailbox = ? AND from_agent = ?',
  )
  const dropSender = db.prepare(
    'DELETE FROM senders WHERE mailbox = ? AND from_agent = ? AND messages <= 0',
  )
  const subtractTotals = db.prepare(
    'UPDATE totals SET messages = messages - ?, bytes = bytes - ? WHERE id = 1',
  )
  const deleteIfOrphan = db.prepare(
    'DELETE FROM messages WHERE id = ? AND NOT EXISTS (SELECT 1 FROM entries WHERE message_ref = ?) ' +
      'RETURNING bytes',
  )
  const expiredMessages = db.prepare(
    'SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b FROM messages WHERE expires_at <= ?',
  )
  const deleteExpiredMessages = db.prepare('DELETE FROM messages WHERE expires_at <= ?')
  const forget = db.prepare('DELETE FROM seen WHERE forget_at <= ?')

  /**
   * A removal for `condition`. `orphans`: delete the messages no entry references any more one
   * by one (false when the caller deletes them in bulk).
   */
  function removal(condition: Condition, orphans: boolean): Removal {
    const from = `FROM entries e JOIN messages m ON m.id = e.message_ref WHERE ${condition}`
    const remember = db.prepare(
      `INSERT INTO seen (mailbox, message_id, from_agent, forget_at) ` +
        `SELECT e.mailbox, e.message_id, e.from_agent, m.forget_at ${from} ` +
        'ON CONFLICT (mailbox, message_id, from_agent) ' +
        'DO UPDATE SET forget_at = max(forget_at, excluded.forget_at)',
    )
    const groups = db.prepare(
      `SELECT e.mailbox, e.from_agent, COUNT(*) AS n, SUM(e.bytes) AS b ${from} ` +
        'GROUP BY e.mailbox, e.from_agent',
    )
    const remove = db
      .prepare(
        `DELETE FROM entries WHERE cursor IN (SELECT e.cursor ${from}) RETURNING message_ref`,
      )
      .pluck()
    return (...params) => {
      const rows = groups.all(...params) as GroupRow[]
      if (rows.length === 0) return 0
      remember.run(...params)
      const perMailbox = new Map<string, { n: number; b: number }>()
      for (const row of rows) {
        subtractSender.run(row.n, row.b, row.mailbox, row.from_agent)
        dropSender.run(row.mailbox, row.from_agent)
        const sum = perMailbox.get(row.mailbox) ?? { n: 0, b: 0 }
        sum.n += row.n
        sum.b += row.b
        perMailbox.set(row.mailbox, sum)
      }
      for (const [mailbox, sum] of perMailbox) subtractMailbox.run(sum.n, sum.b, mailbox)
      const refs = remove.all(...params) as number[]
      if (orphans) {
        let messages = 0
        let bytes = 0
        for (const ref of new Set(refs)) {
          const gone = deleteIfOrphan.get(ref, ref) as { bytes: number } | undefined
          if (gone === undefined) continue
          messages++
          bytes += gone.bytes
        }
        if (messages > 0) subtractTotals.run(messages, bytes)
      }
      return refs.length
    }
  }

  const expiredAll = removal('m.expires_at <= ?', false)

  return {
    ackFrom: removal('e.mailbox = ? AND e.message_id = ? AND e.from_agent = ?', true),
    ackAny: removal('e.mailbox = ? AND e.message_id = ?', true),
    expiredIn: removal('e.mailbox = ? AND m.expires_at <= ?', true),
    expire(now) {
      const removed = expiredAll(now)
      // Every entry of an expired message is gone now: its row goes in bulk.
      const { n, b } = expiredMessages.get(now) as { n: number; b: number }
      if (n > 0) {
        subtractTotals.run(n, b)
        deleteExpiredMessages.run(now)
      }
      forget.run(now)
      return removed
    },
  }
}
