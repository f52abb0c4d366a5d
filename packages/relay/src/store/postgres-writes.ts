/**
 * The PostgreSQL relay store's writes as the group commit runs them (postgres-queue.ts): a batch
 * is one transaction holding one call of `apply_writes` (postgres-functions.ts), so BEGIN, the
 * call and COMMIT are its only round trips. A write's promise settles after that COMMIT returned,
 * which means durable: `apply_writes` turns `synchronous_commit = off` into `local` for its
 * transaction (PROFILE §9: 202 only once durably stored).
 *
 * One write's failure does not fail the others: a full mailbox or relay is an outcome decided
 * before that write stored anything, so the batch goes on. An unexpected error raised by one
 * write (a bug, a value the database refuses) rolls the batch back, and its writes run again one
 * transaction each, so only the failing one fails — as the SQLite writer does. When the
 * connection itself fails (or COMMIT does), every write of the batch fails: whether a lost
 * COMMIT happened cannot be known, so nothing is retried here (a client's retry of a publish is
 * answered as a duplicate if it did).
 */
import pg from 'pg'
import { forgetAtOf, type QueuedSubscriptionWrite, type ResolvedQuota } from './common.js'
import type { PostgresBatchRunner, PostgresSettlement } from './postgres-queue.js'
import {
  MailboxFullError,
  type PublishInput,
  RelayStorageFullError,
  type StorePublishResult,
} from './types.js'

/** One write, as queued and as `apply_writes` reads it (JSON). */
export type PostgresWriteOp =
  | {
      op: 'publish'
      from: string
      messageId: string
      json: string
      bytes: number
      receivedAt: number
      expiresAt: number
      forgetAt: number
      /** Without repeats (common.ts publishMailboxes). */
      mailboxes: string[]
      skipFull: boolean
    }
  | { op: 'ack'; mailbox: string; messageId: string; from: string | null }
  | QueuedSubscriptionWrite

/** The publish op of an input whose mailboxes were checked and deduplicated. */
export function publishOp(input: PublishInput, mailboxes: string[]): PostgresWriteOp {
  return {
    op: 'publish',
    from: input.from,
    messageId: input.messageId,
    json: input.json,
    bytes: input.bytes,
    receivedAt: input.receivedAt,
    expiresAt: input.expiresAt,
    forgetAt: forgetAtOf(input),
    mailboxes,
    skipFull: input.skipFull === true,
  }
}

/** What `publish` returns in SQL: per mailbox, or a refusal. */
type PublishOutcome =
  | { kinds: Array<'n' | 'd' | 'f'>; cursors: Array<string | null> }
  | { full: string; reason: 'mailbox' | 'sender' }
  | { relayFull: true }

function publishSettlement(mailboxes: string[], outcome: PublishOutcome): PostgresSettlement {
  if ('full' in outcome) return { error: new MailboxFullError(outcome.full, outcome.reason) }
  if ('relayFull' in outcome) return { error: new RelayStorageFullError() }
  const results = mailboxes.map((mailbox, i): StorePublishResult => {
    const kind = outcome.kinds[i]
    const cursor = outcome.cursors[i]
    if (kind === 'f') return { mailbox, duplicate: false, full: true }
    const result: StorePublishResult = { mailbox, duplicate: kind === 'd' }
    if (cursor !== null && cursor !== undefined) result.cursor = cursor
    return result
  })
  return { ok: results }
}

function settlementOf(op: PostgresWriteOp, outcome: unknown): PostgresSettlement {
  if (op.op === 'publish') return publishSettlement(op.mailboxes, outcome as PublishOutcome)
  return { ok: outcome ?? undefined }
}

/**
 * An error one write raised (rolled back, the connection fine): worth running the batch's
 * writes one by one. Not: connection trouble (class 08), operator intervention (57: shutdown,
 * cancel), resources (53), system or internal errors (58, XX), or anything not from the server.
 */
function isWriteError(error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError) || error.code === undefined) return false
  return !['08', '53', '57', '58', 'XX'].includes(error.code.slice(0, 2))
}

/** Thrown when ROLLBACK or COMMIT failed: the batch's fate is the connection's. */
class TransactionError extends Error {
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause))
    this.name = 'TransactionError'
  }
}

/** The batch runner of a store whose tables are in the quoted schema `s`. */
export function postgresBatchRunner(
  pool: pg.Pool,
  s: string,
  quota: ResolvedQuota,
): PostgresBatchRunner<PostgresWriteOp> {
  const apply = `SELECT ${s}.apply_writes($1::jsonb, $2::float8[]) AS r`
  const limits = [
    quota.messages,
    quota.bytes,
    quota.senderMessages,
    quota.senderBytes,
    quota.totalBytes,
  ]

  /** One transaction: the outcomes once COMMIT returned. */
  async function transaction(client: pg.PoolClient, ops: PostgresWriteOp[]): Promise<unknown[]> {
    // READ COMMITTED whatever the server's default: each statement of apply_writes then sees
    // what the writers before it (whose lock it waited for) committed.
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED')
    let outcomes: unknown[]
    try {
      const result = await client.query(apply, [JSON.stringify(ops), limits])
      outcomes = result.rows[0].r as unknown[]
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        throw new TransactionError(rollback)
      })
      throw error
    }
    try {
      await client.query('COMMIT')
    } catch (error) {
      throw new TransactionError(error)
    }
    return outcomes
  }

  return async (ops) => {
    const client = await pool.connect()
    /** Set when the connection may be unusable: the pool drops it instead of reusing it. */
    let broken: Error | undefined
    try {
      try {
        const outcomes = await transaction(client, ops)
        return ops.map((op, i) => settlementOf(op, outcomes[i]))
      } catch (error) {
        if (!isWriteError(error)) {
          broken = error instanceof Error ? error : new Error(String(error))
          throw error instanceof TransactionError ? error.cause : error
        }
        if (ops.length === 1) return [{ error }]
      }
      // One write failed the batch: each write alone, so that only that one fails.
      const settlements: PostgresSettlement[] = []
      for (const op of ops) {
        if (broken !== undefined) {
          settlements.push({ error: broken })
          continue
        }
        try {
          settlements.push(settlementOf(op, (await transaction(client, [op]))[0]))
        } catch (error) {
          const cause = error instanceof TransactionError ? error.cause : error
          if (!isWriteError(error))
            broken = cause instanceof Error ? cause : new Error(String(cause))
          settlements.push({ error: cause })
        }
      }
      return settlements
    } finally {
      client.release(broken)
    }
  }
}
