/**
 * The SQLite store's writes, inside the writer's transaction. Every removal (ack, expiry) keeps
 * the quota counters in step and remembers the removed triples until their `forget_at`, so a
 * copy published again is a duplicate (PROFILE §9).
 */
import type Database from 'better-sqlite3'
import type { WriteOp } from './commit-queue.js'
import { decidePublish, noRoomFor, type PublishOutcome, type ResolvedQuota } from './common.js'

type Usage = { messages: number; bytes: number }
/** Entries removed per (mailbox, sender): how many, how many quota bytes. */
type Group = { n: number; b: number }

type Removal = (...params: unknown[]) => number

/** Prepare the writes on `db` for `quota`; the function runs one write. */
export function sqliteWrites(db: Database.Database, quota: ResolvedQuota) {
  const q = (sql: string) => db.prepare(sql)
  const counters = (table: string, where: string) =>
    q(`UPDATE ${table} SET messages = messages - ?, bytes = bytes - ? WHERE ${where}`)
  const subtractMailbox = counters('mailboxes', 'agent = ?')
  const subtractSender = counters('senders', 'mailbox = ? AND from_agent = ?')
  const subtractTotals = counters('totals', 'id = 1')
  const dropSender = q('DELETE FROM senders WHERE mailbox = ? AND from_agent = ? AND messages <= 0')
  const deleteIfOrphan = q(
    'DELETE FROM messages WHERE id = ? AND NOT EXISTS ' +
      '(SELECT 1 FROM entries WHERE message_ref = ?) RETURNING bytes',
  )
  const expiredMessages = q(
    'SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b FROM messages WHERE expires_at <= ?',
  )
  const deleteExpired = q('DELETE FROM messages WHERE expires_at <= ?')
  const forget = q('DELETE FROM seen WHERE forget_at <= ?')

  /** Removes the entries `condition` (on `entries e` joined with `messages m`) matches. */
  function removal(condition: string, orphans: boolean): Removal {
    const from = `FROM entries e JOIN messages m ON m.id = e.message_ref WHERE ${condition}`
    const remember = q(
      'INSERT INTO seen (mailbox, message_id, from_agent, forget_at) ' +
        `SELECT e.mailbox, e.message_id, e.from_agent, m.forget_at ${from} ` +
        'ON CONFLICT (mailbox, message_id, from_agent) ' +
        'DO UPDATE SET forget_at = max(forget_at, excluded.forget_at)',
    )
    const groups = q(
      `SELECT e.mailbox, e.from_agent, COUNT(*) AS n, SUM(e.bytes) AS b ${from} ` +
        'GROUP BY e.mailbox, e.from_agent',
    )
    const remove = q(
      `DELETE FROM entries WHERE cursor IN (SELECT e.cursor ${from}) RETURNING message_ref`,
    ).pluck()
    return (...params) => {
      const rows = groups.all(...params) as Array<{ mailbox: string; from_agent: string } & Group>
      if (rows.length === 0) return 0
      remember.run(...params)
      for (const row of rows) {
        subtractSender.run(row.n, row.b, row.mailbox, row.from_agent)
        dropSender.run(row.mailbox, row.from_agent)
        subtractMailbox.run(row.n, row.b, row.mailbox)
      }
      const refs = remove.all(...params) as number[]
      if (orphans) {
        const orphan = (ref: number) => deleteIfOrphan.all(ref, ref) as Array<{ bytes: number }>
        const gone = [...new Set(refs)].flatMap(orphan)
        if (gone.length > 0)
          subtractTotals.run(
            gone.length,
            gone.reduce((n, g) => n + g.bytes, 0),
          )
      }
      return refs.length
    }
  }
  const ackFrom = removal('e.mailbox = ? AND e.message_id = ? AND e.from_agent = ?', true)
  const ackAny = removal('e.mailbox = ? AND e.message_id = ?', true)
  const expiredIn = removal('e.mailbox = ? AND m.expires_at <= ?', true)
  const expiredAll = removal('m.expires_at <= ?', false)

  function expire(now: number): number {
    const removed = expiredAll(now)
    // Every entry of an expired message is gone now: its row goes in bulk.
    const { n, b } = expiredMessages.get(now) as Group
    if (n > 0) {
      subtractTotals.run(n, b)
      deleteExpired.run(now)
    }
    forget.run(now)
    return removed
  }

  const findEntry = q(
    'SELECT cursor FROM entries WHERE mailbox = ? AND message_id = ? AND from_agent = ?',
  ).pluck()
  const findSeen = q(
    'SELECT 1 FROM seen WHERE mailbox = ? AND message_id = ? AND from_agent = ? AND forget_at > ?',
  ).pluck()
  const usage = (where: string) =>
    db.prepare<unknown[], Usage>(`SELECT messages, bytes FROM ${where}`)
  const mailboxUsage = usage('mailboxes WHERE agent = ?')
  const senderUsage = usage('senders WHERE mailbox = ? AND from_agent = ?')
  const totalBytes = q('SELECT bytes FROM totals WHERE id = 1').pluck()
  const bucketBytes = q('SELECT bytes FROM buckets WHERE bucket = ?').pluck()
  const addMailbox = q(
    "INSERT INTO mailboxes (agent, state, messages, bytes) VALUES (?, 'none', 1, ?) " +
      'ON CONFLICT (agent) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes',
  )
  const addSender = q(
    'INSERT INTO senders (mailbox, from_agent, messages, bytes) VALUES (?, ?, 1, ?) ' +
      'ON CONFLICT (mailbox, from_agent) DO UPDATE SET messages = messages + 1, ' +
      'bytes = bytes + excluded.bytes',
  )
  const addTotals = q('UPDATE totals SET messages = messages + 1, bytes = bytes + ? WHERE id = 1')
  const insertMessage = q(
    'INSERT INTO messages (from_agent, message_id, json, bytes, received_at, expires_at, ' +
      'forget_at, bucket) ' +
      'VALUES (@from, @messageId, @json, @bytes, @receivedAt, @expiresAt, @forgetAt, @bucket)',
  )
  const insertEntry = q(
    'INSERT INTO entries (mailbox, message_ref, from_agent, message_id, bytes) VALUES (?, ?, ?, ?, ?)',
  )

  function publish(p: Extract<WriteOp, { op: 'publish' }>): PublishOutcome {
    const { from, messageId, bytes, receivedAt } = p
    return decidePublish(p.mailboxes, p.skipFull, {
      held(mailbox) {
        const cursor = findEntry.get(mailbox, messageId, from) as number | undefined
        if (cursor !== undefined) return `${cursor}`
        return findSeen.get(mailbox, messageId, from, receivedAt) !== undefined
      },
      noRoom: (mailbox) =>
        noRoomFor(quota, bytes, mailboxUsage.get(mailbox), () => senderUsage.get(mailbox, from)),
      dropExpired: (mailbox) => expiredIn(mailbox, receivedAt),
      overCap: () => (totalBytes.get() as number) + bytes > quota.totalBytes,
      overBucket: () =>
        p.bucket !== null &&
        ((bucketBytes.get(p.bucket) as number | undefined) ?? 0) + bytes > quota.bucketBytes,
      expire: () => expire(receivedAt),
      store(mailboxes) {
        const ref = insertMessage.run(p)
        addTotals.run(bytes)
        return mailboxes.map((mailbox) => {
          addMailbox.run(mailbox, bytes)
          addSender.run(mailbox, from, bytes)
          const entry = insertEntry.run(mailbox, ref.lastInsertRowid, from, messageId, bytes)
          return `${entry.lastInsertRowid}`
        })
      },
    })
  }

  const insertSubscription = q(
    'INSERT INTO subscriptions (id, agent, topics, webhook_url, webhook_verified, created) ' +
      'VALUES (@id, @agent, @topics, @webhookUrl, @verified, @created)',
  )
  const insertTopic = q(
    'INSERT OR IGNORE INTO subscription_topics (topic, subscription_id) VALUES (?, ?)',
  )
  const openMailbox = q(
    "INSERT INTO mailboxes (agent, state) VALUES (?, 'open') " +
      "ON CONFLICT (agent) DO UPDATE SET state = 'open'",
  )
  const deleteSubscription = q('DELETE FROM subscriptions WHERE id = ? AND agent = ?')
  const hasSubscription = q('SELECT 1 FROM subscriptions WHERE agent = ? LIMIT 1').pluck()
  const closeMailbox = q("UPDATE mailboxes SET state = 'closed' WHERE agent = ?")
  const setVerified = q(
    'UPDATE subscriptions SET webhook_verified = ? WHERE id = ? AND webhook_url IS NOT NULL',
  )
  // A write statement that changes nothing: refused on a read-only database or file system.
  const touchTotals = q('UPDATE totals SET messages = messages WHERE id = 1')

  return (op: WriteOp): unknown => {
    switch (op.op) {
      case 'publish':
        return publish(op)
      case 'ack':
        return op.from === null
          ? ackAny(op.mailbox, op.messageId)
          : ackFrom(op.mailbox, op.messageId, op.from)
      case 'expire':
        return expire(op.now)
      case 'subscribe':
        insertSubscription.run({
          ...op,
          topics: JSON.stringify(op.topics),
          verified: op.verified ? 1 : 0,
        })
        for (const topic of op.topics) insertTopic.run(topic, op.id)
        openMailbox.run(op.agent)
        return undefined
      case 'unsubscribe':
        // Its topics go with it (ON DELETE CASCADE).
        if (deleteSubscription.run(op.id, op.agent).changes === 0) return false
        if (hasSubscription.get(op.agent) === undefined) closeMailbox.run(op.agent)
        return true
      case 'setWebhookVerified':
        setVerified.run(op.verified ? 1 : 0, op.id)
        return undefined
      case 'check':
        touchTotals.run()
        return undefined
    }
  }
}
