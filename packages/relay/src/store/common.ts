/**
 * Helpers shared by the relay stores (SQLite, memory): defaults, cursor syntax, input checks.
 */
import { randomBytes } from 'node:crypto'
import type { PublishInput } from './types.js'

/** Per-mailbox quota (PROFILE §9): 10,000 messages or 256 MiB. */
export interface RelayQuota {
  /** Entries a mailbox may hold (default 10,000). */
  messages?: number
  /** Bytes of JSON a mailbox may hold, a topic message counting in full in each (default 256 MiB). */
  bytes?: number
}

export const DEFAULT_QUOTA_MESSAGES = 10_000
export const DEFAULT_QUOTA_BYTES = 256 * 1024 * 1024

export function resolveQuota(quota: RelayQuota | undefined): { messages: number; bytes: number } {
  const messages = quota?.messages ?? DEFAULT_QUOTA_MESSAGES
  const bytes = quota?.bytes ?? DEFAULT_QUOTA_BYTES
  if (!(messages >= 0) || !(bytes >= 0)) throw new RangeError('quota must be non-negative')
  return { messages, bytes }
}

const CURSOR = /^(?:0|[1-9][0-9]{0,15})$/

/**
 * The position after which to read: 0 when `after` is undefined. Cursors are decimal integer
 * text; anything else (or beyond 2^53) is a RangeError.
 */
export function parseAfter(after: string | undefined): number {
  if (after === undefined) return 0
  if (!CURSOR.test(after)) throw new RangeError(`invalid cursor: ${JSON.stringify(after)}`)
  const n = Number(after)
  if (!Number.isSafeInteger(n)) throw new RangeError(`invalid cursor: ${JSON.stringify(after)}`)
  return n
}

export function checkRetrieveOptions(options: { limit: number; maxBytes: number }): void {
  if (!Number.isInteger(options.limit) || options.limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
  if (!(options.maxBytes > 0)) throw new RangeError('maxBytes must be positive')
}

/** Validate a publish and return its mailboxes without repeats (first occurrence order). */
export function publishMailboxes(input: PublishInput): string[] {
  if (!Number.isInteger(input.bytes) || input.bytes < 0) {
    throw new RangeError('bytes must be a non-negative integer')
  }
  if (!Number.isFinite(input.expiresAt) || !Number.isFinite(input.receivedAt)) {
    throw new RangeError('receivedAt and expiresAt must be finite')
  }
  return [...new Set(input.mailboxes)]
}

/** Topics without repeats, in first occurrence order. */
export function uniqueTopics(topics: string[]): string[] {
  return [...new Set(topics)]
}

/** A random subscription id (128 bits, base64url). */
export function newSubscriptionId(): string {
  return randomBytes(16).toString('base64url')
}
