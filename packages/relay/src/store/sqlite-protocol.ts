/**
 * The messages between the SQLite relay store (main thread) and its writer (a `worker_threads`
 * worker, sqlite-writer.ts). Shared by both sides so that the type checker sees the protocol.
 *
 * Start: `workerData` is a {@link SqliteWriterData}. The writer posts `ready` once its
 * connection is open, or `fatal` if it could not open it (and then exits).
 * Main → writer: `batch` (one at a time: the next is sent when this one's `done` came), `close`.
 * Writer → main: `done` with one outcome per op, in order, and the COMMITs it made (one, or one
 * per op after a rollback); `closed` after the connection closed.
 */
import type { QueuedSubscriptionWrite, ResolvedQuota } from './common.js'
import type { PublishInput, StorePublishResult } from './types.js'

/** What a batch of the group commit did, for metrics and benchmarks. */
export interface SqliteCommitInfo {
  /** Writes in the batch (publishes and other writes). */
  size: number
  /** Publishes among them. */
  publishes: number
  /** Time from BEGIN to the end of COMMIT (ms). */
  ms: number
}

/** The writer's `workerData`. */
export interface SqliteWriterData {
  /** Database file (never `':memory:'`: the main thread reads the same file). */
  path: string
  quota: ResolvedQuota
  busyTimeoutMs: number
}

/** One write, as the store queues it and the writer runs it. */
export type SqliteWriteOp =
  | { op: 'publish'; input: PublishInput; mailboxes: string[] }
  | { op: 'ack'; mailbox: string; messageId: string; from: string | undefined }
  | QueuedSubscriptionWrite

/** What each kind of write resolves with. */
export interface SqliteWriteResults {
  publish: StorePublishResult[]
  ack: number
  expire: number
  subscribe: undefined
  unsubscribe: boolean
  setWebhookVerified: undefined
  check: undefined
}

export type SqliteWriteKind = SqliteWriteOp['op']

/** An error crossing the thread boundary (structured clone drops the class). */
export interface SqliteWireError {
  name: string
  message: string
  code?: unknown
}

/**
 * One op's outcome: its value, a mailbox without room (the store's MailboxFullError) or the
 * relay-wide cap (RelayStorageFullError), both decided before the op stored anything, or an
 * unexpected error.
 */
export type SqliteWriteOutcome =
  | { ok: SqliteWriteResults[SqliteWriteKind] }
  | { full: string; reason: 'mailbox' | 'sender' }
  | { relayFull: true }
  | { error: SqliteWireError }

export type ToSqliteWriter = { type: 'batch'; ops: SqliteWriteOp[] } | { type: 'close' }

export type FromSqliteWriter =
  | { type: 'ready' }
  | { type: 'fatal'; error: SqliteWireError }
  | { type: 'done'; outcomes: SqliteWriteOutcome[]; commits: SqliteCommitInfo[] }
  | { type: 'closed' }

export function errorToWire(error: unknown): SqliteWireError {
  if (error instanceof Error) {
    const wire: SqliteWireError = { name: error.name, message: error.message }
    const code = (error as Error & { code?: unknown }).code
    if (code !== undefined) wire.code = code
    return wire
  }
  return { name: 'Error', message: String(error) }
}

export function errorFromWire(wire: SqliteWireError): Error {
  const error = new Error(wire.message)
  error.name = wire.name
  if (wire.code !== undefined) (error as Error & { code?: unknown }).code = wire.code
  return error
}
