/**
 * The reads of the SQLite relay store, on the main thread's own connection (which only reads).
 * In WAL mode a reader sees the last COMMIT, never a write in progress: a write whose promise
 * has not resolved yet is invisible, as the relay has not answered for it either (PROFILE §9).
 */
import type Database from 'better-sqlite3'
import { checkRetrieveOptions, parseAfter } from './common.js'
import type { DuplicateQuery, MailboxEntry, MailboxPage, Subscription } from './types.js'

interface SubscriptionRow {
  id: string
  agent: string
  topics: string
  webhook_url: string | null
  webhook_verified: number
  created: number
}

interface EntryRow {
  cursor: number
  from_agent: string
  message_id: string
  json: string
  json_bytes: number
}

/** The read half of the RelayStore, synchronous (better-sqlite3 is). */
export interface SqliteReads {
  subscriptions(agent?: string): Subscription[]
  mailboxState(agent: string): 'open' | 'closed' | 'none'
  topicSubscribers(topic: string): string[]
  retrieve(
    mailbox: string,
    options: { after?: string; limit: number; maxBytes: number; now: number },
  ): MailboxPage
  isDuplicate(query: DuplicateQuery): boolean
  usage(mailbox?: string, from?: string): { messages: number; bytes: number }
  /** Mailboxes opened by a subscription (open or closed since). */
  countMailboxes(): number
}

function readSubscription(row: SubscriptionRow): Subscription {
  const subscription: Subscription = {
    id: row.id,
    agent: row.agent,
    topics: JSON.parse(row.topics) as string[],
    created: row.created,
  }
  if (row.webhook_url !== null) {
    subscription.webhook = { url: row.webhook_url, verified: row.webhook_verified === 1 }
  }
  return subscription
}

/** Prepare the reads on `db` (schema already migrated). */
export function sqliteReads(db: Database.Database): SqliteReads {
  const page = db.prepare(
    // Pages are sized by the stored text (PROFILE §9: at most 8 MiB), quotas by `bytes`.
    'SELECT e.cursor, e.from_agent, e.message_id, m.json, octet_length(m.json) AS json_bytes ' +
      'FROM entries e ' +
      'JOIN messages m ON m.id = e.message_ref ' +
      'WHERE e.mailbox = ? AND e.cursor > ? AND m.expires_at > ? ORDER BY e.cursor LIMIT ?',
  )
  const usageOf = db.prepare('SELECT messages, bytes FROM mailboxes WHERE agent = ?')
  const senderUsage = db.prepare(
    'SELECT messages, bytes FROM senders WHERE mailbox = ? AND from_agent = ?',
  )
  const totals = db.prepare('SELECT messages, bytes FROM totals WHERE id = 1')
  const holds = db
    .prepare(
      'SELECT EXISTS (SELECT 1 FROM entries WHERE mailbox = @mailbox AND message_id = @messageId ' +
        'AND from_agent = @from) OR EXISTS (SELECT 1 FROM seen WHERE mailbox = @mailbox ' +
        'AND message_id = @messageId AND from_agent = @from AND forget_at > @now)',
    )
    .pluck()
  const allSubscriptions = db.prepare('SELECT * FROM subscriptions ORDER BY created, rowid')
  const agentSubscriptions = db.prepare(
    'SELECT * FROM subscriptions WHERE agent = ? ORDER BY created, rowid',
  )
  const stateOf = db.prepare('SELECT state FROM mailboxes WHERE agent = ?').pluck()
  const mailboxCount = db.prepare("SELECT COUNT(*) FROM mailboxes WHERE state != 'none'").pluck()
  const subscribersOf = db
    .prepare(
      'SELECT DISTINCT s.agent FROM subscription_topics t JOIN subscriptions s ON s.id = t.subscription_id ' +
        'WHERE t.topic = ? ORDER BY s.agent',
    )
    .pluck()

  return {
    subscriptions(agent) {
      const rows = (
        agent === undefined ? allSubscriptions.all() : agentSubscriptions.all(agent)
      ) as SubscriptionRow[]
      return rows.map(readSubscription)
    },

    mailboxState(agent) {
      const state = stateOf.get(agent) as 'open' | 'closed' | 'none' | undefined
      return state ?? 'none'
    },

    topicSubscribers(topic) {
      return subscribersOf.all(topic) as string[]
    },

    retrieve(mailbox, opts) {
      checkRetrieveOptions(opts)
      const after = parseAfter(opts.after)
      const entries: MailboxEntry[] = []
      let bytes = 0
      let cut = false
      const rows = page.iterate(mailbox, after, opts.now, opts.limit) as IterableIterator<EntryRow>
      for (const row of rows) {
        // At least one entry when one is due, however large (RelayStore.retrieve).
        if (entries.length > 0 && bytes + row.json_bytes > opts.maxBytes) {
          cut = true
          break
        }
        bytes += row.json_bytes
        entries.push({
          cursor: String(row.cursor),
          from: row.from_agent,
          messageId: row.message_id,
          json: row.json,
        })
      }
      const last = entries[entries.length - 1]
      const result: MailboxPage = { entries, cursor: last === undefined ? opts.after : last.cursor }
      // Only said of pages with entries: an empty page ends a feed's reading anyway.
      if (last !== undefined && !cut && entries.length < opts.limit) result.complete = true
      return result
    },

    isDuplicate({ mailboxes, from, messageId, now }) {
      return (
        mailboxes.length > 0 &&
        mailboxes.every((mailbox) => holds.get({ mailbox, messageId, from, now }) === 1)
      )
    },

    usage(mailbox, from) {
      const row = (
        mailbox === undefined
          ? totals.get()
          : from === undefined
            ? usageOf.get(mailbox)
            : senderUsage.get(mailbox, from)
      ) as { messages: number; bytes: number } | undefined
      return { messages: row?.messages ?? 0, bytes: row?.bytes ?? 0 }
    },

    countMailboxes() {
      return mailboxCount.get() as number
    },
  }
}
