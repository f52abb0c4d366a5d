// The PostgreSQL store's reads, one statement each. A mailbox's writes commit in cursor order
// (postgres-functions.ts), so a page read after a cursor never misses an entry that commits later.
import { createHash } from 'node:crypto'
import type pg from 'pg'
import type { StoreReads } from './commit-queue.js'
import { pageOf, retrieveAfter, subscriptionOf } from './common.js'
import type { MailboxEntry } from './types.js'

/**
 * A statement prepared once per connection (named after its text): parsing and planning it
 * again on every call cost the server more than running it.
 */
export function prepared(text: string): { name: string; text: string } {
  return { name: `agentmsg_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`, text }
}

/** The reads of the store whose tables are in the quoted schema `s`. */
export function postgresReads(
  pool: pg.Pool,
  s: string,
): StoreReads & { storedMessages(): Promise<number> } {
  // Pages are sized by the stored text (PROFILE §9: at most 8 MiB), quotas by `bytes`. The
  // running sum picks the entries that fit in maxBytes (always the first), on the server, so
  // that a page of large messages does not fetch `limit` of them; `due` says whether bytes cut it.
  const page =
    'SELECT cursor::text AS cursor, from_agent, message_id, json, due::integer AS due ' +
    'FROM (SELECT p.*, row_number() OVER w AS n, sum(p.json_bytes) OVER w AS running, ' +
    'count(*) OVER () AS due ' +
    'FROM (SELECT e.cursor, e.from_agent, e.message_id, m.json, m.json_bytes ' +
    `FROM ${s}.entries e JOIN ${s}.messages m ON m.id = e.message_ref ` +
    'WHERE e.mailbox = $1 AND e.cursor > $2::bigint AND e.expires_at > $3::float8 ' +
    'ORDER BY e.cursor LIMIT $4::bigint) p ' +
    'WINDOW w AS (ORDER BY p.cursor ROWS UNBOUNDED PRECEDING)) q ' +
    'WHERE n = 1 OR running <= $5::float8 ORDER BY q.cursor'
  const holds =
    // Every mailbox holds the triple or remembers it (an empty list is answered in JS).
    'SELECT NOT EXISTS (SELECT 1 FROM unnest($1::text[]) AS b(mailbox) ' +
    `WHERE NOT EXISTS (SELECT 1 FROM ${s}.entries e WHERE e.mailbox = b.mailbox ` +
    'AND e.message_id = $2 AND e.from_agent = $3) ' +
    `AND NOT EXISTS (SELECT 1 FROM ${s}.seen x WHERE x.mailbox = b.mailbox ` +
    'AND x.message_id = $2 AND x.from_agent = $3 AND x.forget_at > $4::float8)) AS held'

  const statements = new Map<string, { name: string; text: string }>()
  const query = (text: string, values: unknown[] = []) => {
    let statement = statements.get(text)
    if (statement === undefined) statements.set(text, (statement = prepared(text)))
    return pool.query({ ...statement, values })
  }
  const first = async (text: string, values: unknown[] = []) => (await query(text, values)).rows[0]
  const usage = async (text: string, values: unknown[]) => {
    const row = await first(`SELECT messages, bytes FROM ${text}`, values)
    return { messages: Number(row?.messages ?? 0), bytes: Number(row?.bytes ?? 0) }
  }

  return {
    async subscriptions(agent) {
      const where = agent === undefined ? '' : ' WHERE agent = $1'
      const { rows } = await query(
        `SELECT id, agent, topics, webhook_url, webhook_verified, created FROM ${s}.subscriptions` +
          `${where} ORDER BY created, seq`,
        agent === undefined ? [] : [agent],
      )
      return rows.map(subscriptionOf)
    },
    mailboxState: async (agent) =>
      (await first(`SELECT state FROM ${s}.mailboxes WHERE agent = $1`, [agent]))?.state ?? 'none',
    async topicSubscribers(topic) {
      const { rows } = await query(
        `SELECT DISTINCT s.agent FROM ${s}.subscription_topics t ` +
          `JOIN ${s}.subscriptions s ON s.id = t.subscription_id WHERE t.topic = $1 ORDER BY s.agent`,
        [topic],
      )
      return rows.map((row: { agent: string }) => row.agent)
    },
    async retrieve(mailbox, opts) {
      const after = retrieveAfter(opts)
      const { rows } = await query(page, [mailbox, after, opts.now, opts.limit, opts.maxBytes])
      const entries: MailboxEntry[] = rows.map((row) => ({
        cursor: row.cursor,
        from: row.from_agent,
        messageId: row.message_id,
        json: row.json,
      }))
      // `due`: entries due within `limit`; fewer in the page means bytes cut it.
      return pageOf(entries, opts, rows.length > 0 && entries.length < rows[0].due)
    },
    isDuplicate: async ({ mailboxes, from, messageId, now }) =>
      mailboxes.length > 0 && (await first(holds, [mailboxes, messageId, from, now])).held === true,
    usage: (mailbox, from) =>
      mailbox === undefined
        ? usage(
            `(SELECT sum(messages) AS messages, sum(bytes) AS bytes FROM ${s}.relay_totals) t`,
            [],
          )
        : from === undefined
          ? usage(`${s}.mailboxes WHERE agent = $1`, [mailbox])
          : usage(`${s}.senders WHERE mailbox = $1 AND from_agent = $2`, [mailbox, from]),
    countMailboxes: async () =>
      (await first(`SELECT count(*)::integer AS n FROM ${s}.mailboxes WHERE state <> 'none'`)).n,
    storedMessages: async () => (await first(`SELECT count(*)::integer AS n FROM ${s}.messages`)).n,
  }
}
