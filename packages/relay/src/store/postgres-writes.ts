/**
 * The PostgreSQL store's batches: BEGIN, one `apply_writes` call, COMMIT (durable: PROFILE §9).
 * An error one write raised rolls the batch back and its writes run again one transaction
 * each, so only that one fails. A failed connection or COMMIT fails the whole batch: whether a
 * lost COMMIT happened cannot be known (a client's retry of a publish is then a duplicate).
 */
import type pg from 'pg'
import type { BatchRunner, Settlement, WriteOp } from './commit-queue.js'
import type { PublishOutcome, ResolvedQuota } from './common.js'
import { prepared } from './postgres-reads.js'
import type { StorePublishResult } from './types.js'

/** What `publish` returns in SQL: per mailbox new/duplicate/full and cursors, or a refusal. */
type SqlPublishOutcome =
  | { kinds: Array<'n' | 'd' | 'f'>; cursors: Array<string | null> }
  | Exclude<PublishOutcome, StorePublishResult[]>

function settlementOf(op: WriteOp, outcome: unknown): Settlement {
  if (op.op !== 'publish') return { ok: outcome ?? undefined }
  const o = outcome as SqlPublishOutcome
  if (!('kinds' in o)) return { ok: o }
  const results = op.mailboxes.map((mailbox, i): StorePublishResult => {
    if (o.kinds[i] === 'f') return { mailbox, duplicate: false, full: true }
    const cursor = o.cursors[i]
    return { mailbox, duplicate: o.kinds[i] === 'd', ...(cursor != null && { cursor }) }
  })
  return { ok: results }
}

/** Thrown when ROLLBACK or COMMIT failed: the batch's fate is the connection's. */
class TransactionError extends Error {
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause))
  }
}

/**
 * The batch runner of a store whose tables are in the quoted schema `s`. Outcomes are told
 * (`decided`) before the COMMIT: cursors come from a sequence, which an aborted transaction
 * does not take back, under the mailbox row locks held to the COMMIT, so a cursor so told is
 * never given again and every lower one of its mailbox is committed or in this commit.
 */
export function postgresBatchRunner(
  pgModule: typeof pg,
  pool: pg.Pool,
  s: string,
  quota: ResolvedQuota,
): BatchRunner<WriteOp> {
  const apply = prepared(`SELECT ${s}.apply_writes($1::jsonb, $2::float8[]) AS r`)
  const { messages, bytes, senderMessages, senderBytes, totalBytes, bucketBytes } = quota
  const limits = [messages, bytes, senderMessages, senderBytes, totalBytes, bucketBytes]

  /**
   * An error one write raised (rolled back, the connection fine). Not: connection trouble (08),
   * operator intervention (57), resources (53), system or internal errors (58, XX), or anything
   * not from the server.
   */
  const isWriteError = (error: unknown) =>
    error instanceof pgModule.DatabaseError &&
    error.code !== undefined &&
    !['08', '53', '57', '58', 'XX'].includes(error.code.slice(0, 2))

  async function transaction(
    client: pg.PoolClient,
    ops: WriteOp[],
    decided?: (outcomes: unknown[]) => void,
  ): Promise<Settlement[]> {
    // READ COMMITTED whatever the server's default: each statement of apply_writes then sees
    // what the writers before it (whose lock it waited for) committed.
    const begin = 'BEGIN ISOLATION LEVEL READ COMMITTED'
    let settlements: Settlement[]
    try {
      await client.query(begin)
      const outcomes = (await client.query({ ...apply, values: [JSON.stringify(ops), limits] }))
        .rows[0].r
      settlements = ops.map((op, i) => settlementOf(op, outcomes[i]))
      decided?.(settlements.map((settled) => (settled as { ok: unknown }).ok))
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        throw new TransactionError(rollback)
      })
      throw error
    }
    await client.query('COMMIT').catch((error: unknown) => {
      throw new TransactionError(error)
    })
    return settlements
  }

  return async (ops, decided) => {
    const client = await pool.connect()
    /** Set when the connection may be unusable: the pool drops it. */
    let broken: Error | undefined
    const unwrap = (error: unknown) => (error instanceof TransactionError ? error.cause : error)
    const breaks = (error: unknown) => {
      if (isWriteError(error)) return false
      const cause = unwrap(error)
      broken = cause instanceof Error ? cause : new Error(String(cause))
      return true
    }
    try {
      try {
        return await transaction(client, ops, decided)
      } catch (error) {
        if (breaks(error)) throw unwrap(error)
        if (ops.length === 1) return [{ error }]
      }
      // One write failed the batch: each alone, so that only that one fails.
      const settlements: Settlement[] = []
      for (const op of ops) {
        try {
          if (broken !== undefined) throw broken
          settlements.push((await transaction(client, [op]))[0]!)
        } catch (error) {
          breaks(error)
          settlements.push({ error: unwrap(error) })
        }
      }
      return settlements
    } finally {
      client.release(broken)
    }
  }
}
