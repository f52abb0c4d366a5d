// The SQLite store's reads on the main thread's connection: in WAL mode the last COMMIT, never
// a write in progress (a publish not answered yet).
import type Database from 'better-sqlite3'
import type { StoreReads } from './commit-queue.js'
import { fillPage, retrieveAfter, subscriptionOf } from './common.js'
import type { MailboxEntry } from './types.js'

export function sqliteReads(db: Database.Database): StoreReads {
  const q = (sql: string) => db.prepare(sql)
  // Pages are sized by the stored text (PROFILE §9: at most 8 MiB), quotas by `bytes`.
  const page = q(
    'SELECT CAST(e.cursor AS TEXT) AS cursor, e.from_agent AS "from", e.message_id AS messageId, ' +
      'm.json, octet_length(m.json) AS size ' +
      'FROM entries e JOIN messages m ON m.id = e.message_ref ' +
      'WHERE e.mailbox = ? AND e.cursor > ? AND m.expires_at > ? ORDER BY e.cursor LIMIT ?',
  )
  const usageOf = q('SELECT messages, bytes FROM mailboxes WHERE agent = ?')
  const senderUsage = q('SELECT messages, bytes FROM senders WHERE mailbox = ? AND from_agent = ?')
  const totals = q('SELECT messages, bytes FROM totals WHERE id = 1')
  const holds = q(
    'SELECT EXISTS (SELECT 1 FROM entries WHERE mailbox = @mailbox AND message_id = @messageId ' +
      'AND from_agent = @from) OR EXISTS (SELECT 1 FROM seen WHERE mailbox = @mailbox ' +
      'AND message_id = @messageId AND from_agent = @from AND forget_at > @now)',
  ).pluck()
  const all = q('SELECT * FROM subscriptions ORDER BY created, rowid')
  const ofAgent = q('SELECT * FROM subscriptions WHERE agent = ? ORDER BY created, rowid')
  const stateOf = q('SELECT state FROM mailboxes WHERE agent = ?').pluck()
  const mailboxCount = q("SELECT COUNT(*) FROM mailboxes WHERE state != 'none'").pluck()
  const subscribersOf = q(
    'SELECT DISTINCT s.agent FROM subscription_topics t ' +
      'JOIN subscriptions s ON s.id = t.subscription_id WHERE t.topic = ? ORDER BY s.agent',
  ).pluck()

  return {
    subscriptions: (agent) =>
      (agent === undefined ? all.all() : ofAgent.all(agent)).map((row) =>
        subscriptionOf(row as Parameters<typeof subscriptionOf>[0]),
      ),
    mailboxState: (agent) => (stateOf.get(agent) as 'open' | 'closed' | undefined) ?? 'none',
    topicSubscribers: (topic) => subscribersOf.all(topic) as string[],
    retrieve(mailbox, opts) {
      const rows = page.iterate(mailbox, retrieveAfter(opts), opts.now, opts.limit)
      return fillPage(rows as Iterable<MailboxEntry & { size: number }>, opts)
    },
    isDuplicate: ({ mailboxes, from, messageId, now }) =>
      mailboxes.length > 0 &&
      mailboxes.every((mailbox) => holds.get({ mailbox, messageId, from, now }) === 1),
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
    countMailboxes: () => mailboxCount.get() as number,
  }
}
