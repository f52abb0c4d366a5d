/**
 * The writes of the SQLite relay store, as statements on the writer's connection (run inside
 * the writer worker, sqlite-writer.ts, within a transaction it opened). Each write either
 * completes, reports a refusal (no room) having changed nothing but dropping expired entries
 * (which quotas count until then), or throws.
 */
import type Database from 'better-sqlite3'
import { forgetAtOf, type ResolvedQuota } from './common.js'
import type { SqliteWriteOp, SqliteWriteResults } from './sqlite-protocol.js'
import { sqliteRemovals } from './sqlite-removals.js'
import type { PublishInput, StorePublishResult } from './types.js'

/** A publish's expected refusal: a mailbox has no room (nothing was written). */
export class SqliteMailboxFull {
  constructor(
    readonly mailbox: string,
    readonly reason: 'mailbox' | 'sender',
  ) {}
}

/** A publish's expected refusal: the relay-wide storage cap (nothing was written). */
export class SqliteRelayFull {}

export type SqliteWriteValue =
  | SqliteWriteResults[SqliteWriteOp['op']]
  | SqliteMailboxFull
  | SqliteRelayFull

/** Run one write on the writer's connection (in the caller's transaction). */
export type SqliteWriteRunner = (op: SqliteWriteOp) => SqliteWriteValue

interface UsageRow {
  messages: number
  bytes: number
}

/** Prepare the writes on `db` for `quota` (PROFILE §9). */
export function sqliteWrites(db: Database.Database, quota: ResolvedQuota): SqliteWriteRunner {
  const removals = sqliteRemovals(db)
  const findEntry = db
    .prepare('SELECT cursor FROM entries WHERE mailbox = ? AND message_id = ? AND from_agent = ?')
    .pluck()
  const findSeen = db
    .prepare(
      'SELECT 1 FROM seen WHERE mailbox = ? AND message_id = ? AND from_agent = ? AND forget_at > ?',
    )
    .pluck()
  const mailboxUsage = db.prepare('SELECT messages, bytes FROM mailboxes WHERE agent = ?')
  const senderUsage = db.prepare(
    'SELECT messages, bytes FROM senders WHERE mailbox = ? AND from_agent = ?',
  )
  const totalBytes = db.prepare('SELECT bytes FROM totals WHERE id = 1').pluck()
  const touchTotals = db.prepare('UPDATE totals SET messages = messages WHERE id = 1')
  const addMailbox = db.prepare(
    "INSERT INTO mailboxes (agent, state, messages, bytes) VALUES (?, 'none', 1, ?) " +
      'ON CONFLICT (agent) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes',
  )
  const addSender = db.prepare(
    'INSERT INTO senders (mailbox, from_agent, messages, bytes) VALUES (?, ?, 1, ?) ' +
      'ON CONFLICT (mailbox, from_agent) DO UPDATE SET messages = messages + 1, ' +
      'bytes = bytes + excluded.bytes',
  )
  const addTotals = db.prepare(
    'UPDATE totals SET messages = messages + 1, bytes = bytes + ? WHERE id = 1',
  )
  const insertMessage = db.prepare(
    'INSERT INTO messages (from_agent, message_id, json, bytes, received_at, expires_at, forget_at) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const insertEntry = db.prepare(
    'INSERT INTO entries (mailbox, message_ref, from_agent, message_id, bytes) VALUES (?, ?, ?, ?, ?)',
  )
  const insertSubscription = db.prepare(
    'INSERT INTO subscriptions (id, agent, topics, webhook_url, webhook_verified, created) ' +
      'VALUES (?, ?, ?, ?, ?, ?)',
  )
  const insertTopic = db.prepare(
    'INSERT OR IGNORE INTO subscription_topics (topic, subscription_id) VALUES (?, ?)',
  )
  const openMailbox = db.prepare(
    "INSERT INTO mailboxes (agent, state) VALUES (?, 'open') ON CONFLICT (agent) DO UPDATE SET state = 'open'",
  )
  const deleteSubscription = db.prepare('DELETE FROM subscriptions WHERE id = ? AND agent = ?')
  const deleteTopics = db.prepare('DELETE FROM subscription_topics WHERE subscription_id = ?')
  const hasSubscription = db.prepare('SELECT 1 FROM subscriptions WHERE agent = ? LIMIT 1').pluck()
  const closeMailbox = db.prepare("UPDATE mailboxes SET state = 'closed' WHERE agent = ?")
  const setVerified = db.prepare(
    'UPDATE subscriptions SET webhook_verified = ? WHERE id = ? AND webhook_url IS NOT NULL',
  )

  /** Why `mailbox` has no room for a message of `bytes` from `from` (quotas count expired entries). */
  function noRoom(mailbox: string, from: string, bytes: number): 'mailbox' | 'sender' | undefined {
    const box = mailboxUsage.get(mailbox) as UsageRow | undefined
    if ((box?.messages ?? 0) + 1 > quota.messages || (box?.bytes ?? 0) + bytes > quota.bytes) {
      return 'mailbox'
    }
    const sender = senderUsage.get(mailbox, from) as UsageRow | undefined
    if (
      (sender?.messages ?? 0) + 1 > quota.senderMessages ||
      (sender?.bytes ?? 0) + bytes > quota.senderBytes
    ) {
      return 'sender'
    }
    return undefined
  }

  /** As {@link noRoom}, after dropping the mailbox's expired entries when it is full. */
  function noRoomNow(input: PublishInput, mailbox: string): 'mailbox' | 'sender' | undefined {
    const reason = noRoom(mailbox, input.from, input.bytes)
    if (reason === undefined || removals.expiredIn(mailbox, input.receivedAt) === 0) return reason
    return noRoom(mailbox, input.from, input.bytes)
  }

  const overCap = (bytes: number) => (totalBytes.get() as number) + bytes > quota.totalBytes

  /**
   * Decide every mailbox before writing anything: held or remembered → duplicate; no room →
   * refusal (or skipped with `skipFull`); then store the message once for the others.
   */
  function publish(
    input: PublishInput,
    mailboxes: string[],
  ): StorePublishResult[] | SqliteMailboxFull | SqliteRelayFull {
    const { from, messageId, bytes, receivedAt } = input
    // Expired messages do not hold room under the relay-wide cap either.
    if (overCap(bytes)) removals.expire(receivedAt)
    const results: StorePublishResult[] = []
    const fresh: StorePublishResult[] = []
    for (const mailbox of mailboxes) {
      const existing = findEntry.get(mailbox, messageId, from) as number | undefined
      if (existing !== undefined) {
        results.push({ mailbox, cursor: String(existing), duplicate: true })
        continue
      }
      if (findSeen.get(mailbox, messageId, from, receivedAt) !== undefined) {
        results.push({ mailbox, duplicate: true })
        continue
      }
      const reason = noRoomNow(input, mailbox)
      if (reason !== undefined) {
        if (!input.skipFull) return new SqliteMailboxFull(mailbox, reason)
        results.push({ mailbox, duplicate: false, full: true })
        continue
      }
      const result: StorePublishResult = { mailbox, duplicate: false }
      fresh.push(result)
      results.push(result)
    }
    if (fresh.length === 0) return results
    if (overCap(bytes)) return new SqliteRelayFull()
    // The message is stored once, however many mailboxes reference it.
    const ref = insertMessage.run(
      from,
      messageId,
      input.json,
      bytes,
      receivedAt,
      input.expiresAt,
      forgetAtOf(input),
    ).lastInsertRowid
    addTotals.run(bytes)
    for (const result of fresh) {
      addMailbox.run(result.mailbox, bytes)
      addSender.run(result.mailbox, from, bytes)
      result.cursor = String(
        insertEntry.run(result.mailbox, ref, from, messageId, bytes).lastInsertRowid,
      )
    }
    return results
  }

  return (op) => {
    switch (op.op) {
      case 'publish':
        return publish(op.input, op.mailboxes)
      case 'ack':
        return op.from === undefined
          ? removals.ackAny(op.mailbox, op.messageId)
          : removals.ackFrom(op.mailbox, op.messageId, op.from)
      case 'expire':
        return removals.expire(op.now)
      case 'subscribe':
        insertSubscription.run(
          op.id,
          op.agent,
          JSON.stringify(op.topics),
          op.webhookUrl,
          op.verified ? 1 : 0,
          op.created,
        )
        for (const topic of op.topics) insertTopic.run(topic, op.id)
        openMailbox.run(op.agent)
        return undefined
      case 'unsubscribe':
        if (deleteSubscription.run(op.id, op.agent).changes === 0) return false
        deleteTopics.run(op.id)
        if (hasSubscription.get(op.agent) === undefined) closeMailbox.run(op.agent)
        return true
      case 'setWebhookVerified':
        setVerified.run(op.verified ? 1 : 0, op.id)
        return undefined
      case 'check':
        // A write statement: refused on a read-only database or file system (SQLite writes no
        // page for it, so no fsync); the batch's BEGIN IMMEDIATE already took the write lock.
        touchTotals.run()
        return undefined
      default:
        throw new Error(`unknown relay store op ${(op as { op: unknown }).op}`)
    }
  }
}
