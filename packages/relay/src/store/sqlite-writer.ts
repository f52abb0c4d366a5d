/**
 * The write side of the SQLite relay store, run in a `worker_threads` worker (see sqlite.ts).
 *
 * The worker's code is this string, started with `new Worker(WRITER_SOURCE, { eval: true })`:
 * the relay package is bundled into one `dist/index.js` by tsup (and into other single files by
 * tests), so a separate worker module would not exist next to it after a build. Keeping the code
 * as plain JavaScript text makes it independent of where the store module ended up. It is a
 * CommonJS script; better-sqlite3 is loaded from the absolute path the main thread found.
 *
 * Protocol. workerData: `{ sqlite, path, quota, busyTimeoutMs }`. The worker posts
 * `{ type: 'ready' }` or `{ type: 'fatal', error }` after opening. Main → worker:
 * `{ type: 'batch', ops }` (one at a time: the next batch is sent when this one's answer came),
 * `{ type: 'close' }`. Worker → main: `{ type: 'done', outcomes, commits }`, where an outcome is
 * `{ ok: value }`, `{ full: mailbox }` (a MailboxFullError) or `{ error: { name, message, code } }`,
 * and `commits` lists `{ size, publishes, ms }` per COMMIT (one, or one per write after a
 * rollback); `{ type: 'closed' }` after the connection closed.
 *
 * Ops: `{ t: 'pub', input, mailboxes }`, `{ t: 'ack', mailbox, messageId, from }`,
 * `{ t: 'exp', now }`, `{ t: 'sub', id, agent, topics, webhookUrl, verified, created }`,
 * `{ t: 'unsub', id, agent }`, `{ t: 'ver', id, verified }`.
 */
export const WRITER_SOURCE = String.raw`
'use strict'
const { parentPort, workerData } = require('node:worker_threads')
const { performance } = require('node:perf_hooks')
const Database = require(workerData.sqlite)
const quota = workerData.quota

function errorOf(error) {
  if (error instanceof Error) return { name: error.name, message: error.message, code: error.code }
  return { name: 'Error', message: String(error) }
}

let db
try {
  db = new Database(workerData.path)
  db.pragma('busy_timeout = ' + workerData.busyTimeoutMs)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
} catch (error) {
  try { if (db) db.close() } catch {}
  parentPort.postMessage({ type: 'fatal', error: errorOf(error) })
  db = undefined
}

if (db !== undefined) {
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')

  const findEntry = db
    .prepare('SELECT cursor FROM entries WHERE mailbox = ? AND message_id = ? AND from_agent = ?')
    .pluck()
  const reserve = db.prepare(
    'UPDATE mailboxes SET messages = messages + 1, bytes = bytes + ? ' +
      'WHERE agent = ? AND messages + 1 <= ? AND bytes + ? <= ?',
  )
  const addUsage = db.prepare(
    "INSERT INTO mailboxes (agent, state, messages, bytes) VALUES (?, 'none', 1, ?) " +
      'ON CONFLICT (agent) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes',
  )
  const insertMessage = db.prepare(
    'INSERT INTO messages (from_agent, message_id, json, bytes, received_at, expires_at) ' +
      'VALUES (?, ?, ?, ?, ?, ?)',
  )
  const insertEntry = db.prepare(
    'INSERT INTO entries (mailbox, message_ref, from_agent, message_id, bytes) VALUES (?, ?, ?, ?, ?)',
  )
  const usageOf = db.prepare('SELECT messages, bytes FROM mailboxes WHERE agent = ?')
  const subtractUsage = db.prepare(
    'UPDATE mailboxes SET messages = messages - ?, bytes = bytes - ? WHERE agent = ?',
  )
  const deleteEntriesById = db.prepare(
    'DELETE FROM entries WHERE mailbox = ? AND message_id = ? RETURNING message_ref, bytes',
  )
  const deleteEntriesByIdFrom = db.prepare(
    'DELETE FROM entries WHERE mailbox = ? AND message_id = ? AND from_agent = ? ' +
      'RETURNING message_ref, bytes',
  )
  const deleteIfOrphan = db.prepare(
    'DELETE FROM messages WHERE id = ? AND NOT EXISTS (SELECT 1 FROM entries WHERE message_ref = ?)',
  )
  const expiredByMailbox = db.prepare(
    'SELECT e.mailbox, COUNT(*) AS n, SUM(e.bytes) AS b FROM messages m ' +
      'JOIN entries e ON e.message_ref = m.id WHERE m.expires_at <= ? GROUP BY e.mailbox',
  )
  const expiredInMailbox = db.prepare(
    'SELECT COUNT(*) AS n, SUM(e.bytes) AS b FROM entries e JOIN messages m ON m.id = e.message_ref ' +
      'WHERE e.mailbox = ? AND m.expires_at <= ?',
  )
  const deleteExpiredEntries = db.prepare(
    'DELETE FROM entries WHERE message_ref IN (SELECT id FROM messages WHERE expires_at <= ?)',
  )
  const deleteExpiredInMailbox = db.prepare(
    'DELETE FROM entries WHERE mailbox = ? ' +
      'AND message_ref IN (SELECT id FROM messages WHERE expires_at <= ?)',
  )
  const deleteExpiredMessages = db.prepare('DELETE FROM messages WHERE expires_at <= ?')
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

  /** A write's expected failure (a full mailbox), decided before it wrote anything. */
  class Full {
    constructor(mailbox) {
      this.mailbox = mailbox
    }
  }

  function purgeExpired(mailbox, now) {
    const row = expiredInMailbox.get(mailbox, now)
    if (row.n === 0) return false
    subtractUsage.run(row.n, row.b ?? 0, mailbox)
    deleteExpiredInMailbox.run(mailbox, now)
    return true
  }

  function hasRoom(mailbox, bytes, now) {
    const fits = () => {
      const row = usageOf.get(mailbox)
      return (row?.messages ?? 0) + 1 <= quota.messages && (row?.bytes ?? 0) + bytes <= quota.bytes
    }
    return fits() || (purgeExpired(mailbox, now) && fits())
  }

  function publishOne(input, mailbox) {
    const existing = findEntry.get(mailbox, input.messageId, input.from)
    if (existing !== undefined) return [{ mailbox, cursor: String(existing), duplicate: true }]
    const bytes = input.bytes
    if (reserve.run(bytes, mailbox, quota.messages, bytes, quota.bytes).changes === 0) {
      if (!hasRoom(mailbox, bytes, input.receivedAt)) return new Full(mailbox)
      addUsage.run(mailbox, bytes)
    }
    const ref = insertMessage.run(
      input.from, input.messageId, input.json, bytes, input.receivedAt, input.expiresAt,
    ).lastInsertRowid
    const cursor = insertEntry.run(mailbox, ref, input.from, input.messageId, bytes).lastInsertRowid
    return [{ mailbox, cursor: String(cursor), duplicate: false }]
  }

  function publishMany(input, mailboxes) {
    const results = []
    const fresh = []
    for (const mailbox of mailboxes) {
      const existing = findEntry.get(mailbox, input.messageId, input.from)
      if (existing !== undefined) {
        results.push({ mailbox, cursor: String(existing), duplicate: true })
        continue
      }
      if (!hasRoom(mailbox, input.bytes, input.receivedAt)) return new Full(mailbox)
      const result = { mailbox, cursor: '', duplicate: false }
      fresh.push(result)
      results.push(result)
    }
    if (fresh.length === 0) return results
    const ref = insertMessage.run(
      input.from, input.messageId, input.json, input.bytes, input.receivedAt, input.expiresAt,
    ).lastInsertRowid
    for (const result of fresh) {
      addUsage.run(result.mailbox, input.bytes)
      const cursor = insertEntry.run(
        result.mailbox, ref, input.from, input.messageId, input.bytes,
      ).lastInsertRowid
      result.cursor = String(cursor)
    }
    return results
  }

  function ackWrite(mailbox, messageId, from) {
    const rows =
      from === undefined || from === null
        ? deleteEntriesById.all(mailbox, messageId)
        : deleteEntriesByIdFrom.all(mailbox, messageId, from)
    if (rows.length === 0) return 0
    let bytes = 0
    for (const row of rows) bytes += row.bytes
    subtractUsage.run(rows.length, bytes, mailbox)
    for (const ref of new Set(rows.map((row) => row.message_ref))) deleteIfOrphan.run(ref, ref)
    return rows.length
  }

  function expireWrite(now) {
    const perMailbox = expiredByMailbox.all(now)
    for (const row of perMailbox) subtractUsage.run(row.n, row.b, row.mailbox)
    const removed = deleteExpiredEntries.run(now).changes
    deleteExpiredMessages.run(now)
    return removed
  }

  function run(op) {
    switch (op.t) {
      case 'pub':
        return op.mailboxes.length === 1
          ? publishOne(op.input, op.mailboxes[0])
          : publishMany(op.input, op.mailboxes)
      case 'ack':
        return ackWrite(op.mailbox, op.messageId, op.from)
      case 'exp':
        return expireWrite(op.now)
      case 'sub':
        insertSubscription.run(
          op.id, op.agent, JSON.stringify(op.topics), op.webhookUrl, op.verified ? 1 : 0, op.created,
        )
        for (const topic of op.topics) insertTopic.run(topic, op.id)
        openMailbox.run(op.agent)
        return undefined
      case 'unsub':
        if (deleteSubscription.run(op.id, op.agent).changes === 0) return false
        deleteTopics.run(op.id)
        if (hasSubscription.get(op.agent) === undefined) closeMailbox.run(op.agent)
        return true
      case 'ver':
        setVerified.run(op.verified ? 1 : 0, op.id)
        return undefined
      default:
        throw new Error('unknown relay store op ' + op.t)
    }
  }

  function outcomeOf(value) {
    return value instanceof Full ? { full: value.mailbox } : { ok: value }
  }

  function rollbackQuietly() {
    try {
      if (db.inTransaction) rollback.run()
    } catch {}
  }

  function countPublishes(ops) {
    let n = 0
    for (const op of ops) if (op.t === 'pub') n++
    return n
  }

  /** Every op in one transaction; on an unexpected error, each op in its own. */
  function runBatch(ops) {
    const outcomes = new Array(ops.length)
    const start = performance.now()
    try {
      begin.run()
      try {
        for (let i = 0; i < ops.length; i++) outcomes[i] = outcomeOf(run(ops[i]))
      } catch {
        rollbackQuietly()
        return runAlone(ops)
      }
      commit.run()
    } catch (error) {
      rollbackQuietly()
      const e = errorOf(error)
      return { outcomes: ops.map(() => ({ error: e })), commits: [] }
    }
    const commits = [{ size: ops.length, publishes: countPublishes(ops), ms: performance.now() - start }]
    return { outcomes, commits }
  }

  function runAlone(ops) {
    const outcomes = []
    const commits = []
    for (const op of ops) {
      const start = performance.now()
      let outcome
      try {
        begin.run()
        outcome = outcomeOf(run(op))
        commit.run()
      } catch (error) {
        rollbackQuietly()
        outcomes.push({ error: errorOf(error) })
        continue
      }
      commits.push({ size: 1, publishes: op.t === 'pub' ? 1 : 0, ms: performance.now() - start })
      outcomes.push(outcome)
    }
    return { outcomes, commits }
  }

  parentPort.on('message', (msg) => {
    if (msg.type === 'batch') {
      const { outcomes, commits } = runBatch(msg.ops)
      parentPort.postMessage({ type: 'done', outcomes, commits })
    } else if (msg.type === 'close') {
      try {
        db.close()
      } catch {}
      parentPort.postMessage({ type: 'closed' })
      parentPort.close()
    }
  })
  parentPort.postMessage({ type: 'ready' })
}
`
