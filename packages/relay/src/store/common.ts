/**
 * Helpers shared by the relay stores (SQLite, memory): defaults, cursor syntax, input checks.
 */
import { randomBytes } from 'node:crypto'
import type { PublishInput, StorePublishResult } from './types.js'

/** Quotas of PROFILE §9 (all configurable). */
export interface RelayQuota {
  /** Entries a mailbox may hold. @default 10,000 */
  messages?: number
  /** Bytes a mailbox may hold, a topic message counting in full in each. @default 256 MiB */
  bytes?: number
  /** Entries one sender may hold in one mailbox. @default a quarter of `messages` (at least 1) */
  senderMessages?: number
  /** Bytes one sender may hold in one mailbox. @default a quarter of `bytes` */
  senderBytes?: number
  /** Bytes the whole relay may hold, a topic message counting once. @default 10 GiB */
  totalBytes?: number
}

/** Every quota, resolved. */
export type ResolvedQuota = Required<RelayQuota>

export const DEFAULT_QUOTA_MESSAGES = 10_000
export const DEFAULT_QUOTA_BYTES = 256 * 1024 * 1024
export const DEFAULT_QUOTA_TOTAL_BYTES = 10 * 1024 * 1024 * 1024

/**
 * How long a triple is remembered after the relay received it when the publish does not say:
 * the 8-day date window plus the 5 minutes a date may be ahead, and a margin (PROFILE §6, §9).
 */
export const DEFAULT_FORGET_AFTER_MS = 8 * 86_400_000 + 15 * 60_000

export function resolveQuota(quota: RelayQuota | undefined): ResolvedQuota {
  const messages = quota?.messages ?? DEFAULT_QUOTA_MESSAGES
  const bytes = quota?.bytes ?? DEFAULT_QUOTA_BYTES
  // PROFILE §9: one sender may hold at most a quarter of a mailbox.
  const resolved = {
    messages,
    bytes,
    senderMessages: quota?.senderMessages ?? Math.max(1, Math.floor(messages / 4)),
    senderBytes: quota?.senderBytes ?? Math.floor(bytes / 4),
    totalBytes: quota?.totalBytes ?? DEFAULT_QUOTA_TOTAL_BYTES,
  }
  for (const value of Object.values(resolved)) {
    if (!(value >= 0)) throw new RangeError('quotas must be non-negative numbers')
  }
  return resolved
}

/** Until when a publish's triple is remembered after its entry is gone. */
export function forgetAtOf(input: PublishInput): number {
  return input.forgetAt ?? input.receivedAt + DEFAULT_FORGET_AFTER_MS
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

/** The UTF-8 length of a string (page sizes count the stored JSON text). */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8')
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
  if (input.forgetAt !== undefined && !Number.isFinite(input.forgetAt)) {
    throw new RangeError('forgetAt must be finite')
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

/**
 * The writes a queued store (SQLite, PostgreSQL) carries besides publish and ack, whose shapes
 * differ per store.
 */
export type QueuedSubscriptionWrite =
  | { op: 'expire'; now: number }
  | {
      op: 'subscribe'
      id: string
      agent: string
      topics: string[]
      webhookUrl: string | null
      verified: boolean
      created: number
    }
  | { op: 'unsubscribe'; id: string; agent: string }
  | { op: 'setWebhookVerified'; id: string; verified: boolean }
  /** Readiness (`checkWritable`): a write turn that changes nothing. */
  | { op: 'check' }

/**
 * `RelayStore.publish` of a queued store: the input checked and its mailboxes deduplicated, then
 * queued by `enqueue`; no mailboxes resolves `[]` at once (a closed store still refuses).
 */
export function queuePublish(
  input: PublishInput,
  closed: boolean,
  enqueue: (mailboxes: string[]) => Promise<StorePublishResult[]>,
): Promise<StorePublishResult[]> {
  let mailboxes: string[]
  try {
    mailboxes = publishMailboxes(input)
  } catch (error) {
    return Promise.reject(error)
  }
  if (mailboxes.length === 0) {
    return closed ? Promise.reject(new Error('relay store is closed')) : Promise.resolve([])
  }
  return enqueue(mailboxes)
}
