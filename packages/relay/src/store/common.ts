/** What the relay stores share: quotas, cursors, pages, input checks, the publish decision. */
import { createHmac, randomBytes } from 'node:crypto'
import { PROFILE } from '@agentmsg/core'
import {
  type MailboxEntry,
  MailboxFullError,
  type MailboxPage,
  type PublishInput,
  RelayStorageFullError,
  type RelayStore,
  type StorePublishResult,
  type Subscription,
} from './types.js'

/** Quotas of PROFILE §9, all configurable. */
export interface RelayQuota {
  /** Entries a mailbox may hold. @default 10,000 */
  messages?: number
  /** Bytes a mailbox may hold (a topic message in full in each). @default 256 MiB */
  bytes?: number
  /** Entries of one sender in one mailbox. @default a quarter of `messages` (at least 1) */
  senderMessages?: number
  /** Bytes of one sender in one mailbox. @default a quarter of `bytes` */
  senderBytes?: number
  /** Bytes the relay holds (a topic message once). @default 10 GiB */
  totalBytes?: number
  /** Bytes charged to one client address bucket (PROFILE §9). @default 5% of `totalBytes` */
  bucketBytes?: number
}

export type ResolvedQuota = Required<RelayQuota>

export function resolveQuota(quota: RelayQuota | undefined): ResolvedQuota {
  const messages = quota?.messages ?? PROFILE.mailboxMessages
  const bytes = quota?.bytes ?? PROFILE.mailboxBytes
  const totalBytes = quota?.totalBytes ?? PROFILE.relayBytes
  const resolved = {
    messages,
    bytes,
    senderMessages:
      quota?.senderMessages ?? Math.max(1, Math.floor(messages * PROFILE.senderShare)),
    senderBytes: quota?.senderBytes ?? Math.floor(bytes * PROFILE.senderShare),
    totalBytes,
    bucketBytes: quota?.bucketBytes ?? Math.floor(totalBytes * PROFILE.storageBucketShare),
  }
  for (const value of Object.values(resolved)) {
    if (!(value >= 0)) throw new RangeError('quotas must be non-negative numbers')
  }
  return resolved
}

type Usage = { messages: number; bytes: number }

/** Why a mailbox holding `box` (of it `sender()` from this sender) has no room for `bytes`. */
export function noRoomFor(
  quota: ResolvedQuota,
  bytes: number,
  box: Usage | undefined,
  sender: () => Usage | undefined,
): 'mailbox' | 'sender' | undefined {
  const over = (u: Usage | undefined, messages: number, max: number) =>
    (u?.messages ?? 0) + 1 > messages || (u?.bytes ?? 0) + bytes > max
  if (over(box, quota.messages, quota.bytes)) return 'mailbox'
  return over(sender(), quota.senderMessages, quota.senderBytes) ? 'sender' : undefined
}

/**
 * A store's hasher of client address buckets: HMAC-SHA-256 under the store's key, 128 bits, so
 * the store holds no address (PROFILE §9) while every process sharing it charges alike.
 */
export const bucketHasher =
  (key: Uint8Array) =>
  (bucket: string | undefined): string | null =>
    bucket === undefined
      ? null
      : createHmac('sha256', key).update(bucket).digest('base64url').slice(0, 22)

/** Until when a publish's triple is remembered after its entry is gone. */
export const forgetAtOf = (input: PublishInput): number =>
  input.forgetAt ?? input.receivedAt + PROFILE.relayForgetAfterReceiptMs

const CURSOR = /^(?:0|[1-9][0-9]{0,15})$/

/** The position a retrieve reads after (cursors: decimal integer text), its options checked. */
export function retrieveAfter(options: { after?: string; limit: number; maxBytes: number }) {
  if (!Number.isInteger(options.limit) || options.limit < 1) {
    throw new RangeError('limit must be a positive integer')
  }
  if (!(options.maxBytes > 0)) throw new RangeError('maxBytes must be positive')
  const { after = '0' } = options
  const n = CURSOR.test(after) ? Number(after) : Number.NaN
  if (!Number.isSafeInteger(n)) throw new RangeError(`invalid cursor: ${JSON.stringify(after)}`)
  return n
}

/**
 * A page of `entries` read for `options`; `cut` when `maxBytes` stopped it. Complete is only
 * said of pages with entries: an empty page ends a feed's reading anyway.
 */
export function pageOf(
  entries: MailboxEntry[],
  options: { after?: string; limit: number },
  cut: boolean,
) {
  const last = entries[entries.length - 1]
  const page: MailboxPage = { entries, cursor: last === undefined ? options.after : last.cursor }
  if (last !== undefined && !cut && entries.length < options.limit) page.complete = true
  return page
}

/** A page of the due entries `rows` (cursor order): at most `limit`, and `maxBytes` but one. */
export function fillPage(
  rows: Iterable<MailboxEntry & { size: number }>,
  options: { after?: string; limit: number; maxBytes: number },
): MailboxPage {
  const entries: MailboxEntry[] = []
  let bytes = 0
  for (const { size, ...entry } of rows) {
    if (entries.length >= options.limit) break
    if (entries.length > 0 && bytes + size > options.maxBytes) return pageOf(entries, options, true)
    bytes += size
    entries.push(entry)
  }
  return pageOf(entries, options, false)
}

/** Check a publish; its mailboxes without repeats, in first occurrence order. */
export function publishMailboxes(input: PublishInput): string[] {
  if (!Number.isInteger(input.bytes) || input.bytes < 0) {
    throw new RangeError('bytes must be a non-negative integer')
  }
  if (![input.receivedAt, input.expiresAt, input.forgetAt ?? 0].every(Number.isFinite)) {
    throw new RangeError('receivedAt, expiresAt and forgetAt must be finite')
  }
  return [...new Set(input.mailboxes)]
}

/** A new subscription: a random id (128 bits), topics without repeats. */
export function newSubscription(input: Parameters<RelayStore['subscribe']>[0]): Subscription {
  const subscription: Subscription = {
    id: randomBytes(16).toString('base64url'),
    agent: input.agent,
    topics: [...new Set(input.topics)],
    created: input.now,
  }
  if (input.webhook !== undefined) subscription.webhook = { ...input.webhook }
  return subscription
}

/** A subscription as a store's row has it (topics as JSON text or an array, verified as 0/1). */
export function subscriptionOf(row: {
  id: string
  agent: string
  topics: string | string[]
  webhook_url: string | null
  webhook_verified: number | boolean
  created: number
}): Subscription {
  const { id, agent, created } = row
  const topics = typeof row.topics === 'string' ? (JSON.parse(row.topics) as string[]) : row.topics
  const subscription: Subscription = { id, agent, topics, created }
  if (row.webhook_url !== null) {
    subscription.webhook = { url: row.webhook_url, verified: Boolean(row.webhook_verified) }
  }
  return subscription
}

/** A writer's answer to a publish: per mailbox, or the refusal decided before it stored anything. */
export type PublishOutcome =
  | StorePublishResult[]
  | { full: string; reason: 'mailbox' | 'sender' }
  | { relayFull: 'relay' | 'bucket' }

/** A store's side of the publish decision (memory, SQLite). */
export interface PublishSite {
  /** The triple in `mailbox`: held (its cursor), remembered (true), or new (false). */
  held(mailbox: string): string | boolean
  noRoom(mailbox: string): 'mailbox' | 'sender' | undefined
  dropExpired(mailbox: string): number
  /** Relay-wide bytes held plus the message's pass the cap. */
  overCap(): boolean
  /** The bytes its client address bucket holds plus the message's pass the bucket's share. */
  overBucket(): boolean
  /** Expire at the publish's receipt. */
  expire(): void
  /** Store the message once, an entry in each of `mailboxes`; their cursors. */
  store(mailboxes: string[]): string[]
}

/**
 * The publish decision (PROFILE §9): every mailbox is decided before anything is stored, so a
 * refusal stores nothing. Held or remembered → duplicate; no room → refused, or skipped with
 * `skipFull`; then the relay-wide cap and the bucket's share, once for the message.
 */
export function decidePublish(mailboxes: string[], skipFull: boolean, site: PublishSite) {
  // Expired messages do not hold room under the relay-wide cap or a bucket's share either.
  if (site.overCap() || site.overBucket()) site.expire()
  const results: StorePublishResult[] = []
  const fresh: StorePublishResult[] = []
  for (const mailbox of mailboxes) {
    const held = site.held(mailbox)
    if (held !== false) {
      results.push({ mailbox, duplicate: true, ...(held !== true && { cursor: held }) })
      continue
    }
    let reason = site.noRoom(mailbox)
    if (reason !== undefined && site.dropExpired(mailbox) > 0) reason = site.noRoom(mailbox)
    if (reason !== undefined) {
      if (!skipFull) return { full: mailbox, reason }
      results.push({ mailbox, duplicate: false, full: true })
      continue
    }
    const result: StorePublishResult = { mailbox, duplicate: false }
    fresh.push(result)
    results.push(result)
  }
  if (fresh.length === 0) return results
  if (site.overCap()) return { relayFull: 'relay' as const }
  if (site.overBucket()) return { relayFull: 'bucket' as const }
  const cursors = site.store(fresh.map((r) => r.mailbox))
  for (const [i, r] of fresh.entries()) r.cursor = cursors[i]
  return results
}

/** A publish outcome as the store resolves or rejects it. */
export function publishResult(outcome: PublishOutcome): StorePublishResult[] {
  if (Array.isArray(outcome)) return outcome
  if ('full' in outcome) throw new MailboxFullError(outcome.full, outcome.reason)
  throw new RelayStorageFullError(outcome.relayFull)
}
