/** What the RelayStore suite publishes, and how it reads stores back. */
import { PROFILE } from '@agentmsg/core'
import type { MailboxEntry, PublishInput, RelayStore } from '@agentmsg/relay'
import { expect } from 'vitest'

type RetrieveOptions = Parameters<RelayStore['retrieve']>[1]

/** The clock of the suite: every publish input is received at this time unless told otherwise. */
export const RELAY_STORE_NOW = 1_700_000_000_000
export const NOW = RELAY_STORE_NOW
export const WEEK = PROFILE.relayRetentionMs
export const DAY = WEEK / 7
export const BIG_PAGE = { limit: PROFILE.maxPageLimit, maxBytes: PROFILE.pageBytes, now: NOW }

let counter = 0

/**
 * A message to publish to `mailboxes` from a fixed sender, received now, kept a week; `size`
 * pads the JSON to about that many bytes.
 * @example
 * await store.publish(publishInput(['alice'], { size: 2000, receivedAt: RELAY_STORE_NOW + 10 }))
 */
export function publishInput(
  mailboxes: string[],
  overrides: Partial<Omit<PublishInput, 'json' | 'bytes'>> & { size?: number; body?: string } = {},
): PublishInput {
  const from = overrides.from ?? 'did:key:z6MkSender'
  const messageId = overrides.messageId ?? `msg-${++counter}`
  const base = { message_id: messageId, from: { agent: from }, body: overrides.body ?? 'hello é' }
  let json = JSON.stringify(base)
  if (overrides.size !== undefined && overrides.size > json.length) {
    json = JSON.stringify({ ...base, pad: 'x'.repeat(overrides.size - json.length - 10) })
  }
  return {
    mailboxes,
    from,
    messageId,
    json,
    bytes: new TextEncoder().encode(json).length,
    receivedAt: overrides.receivedAt ?? NOW,
    expiresAt: overrides.expiresAt ?? NOW + WEEK,
  }
}

/** Numeric order of cursors (the stores' cursors are integer text). */
export function cursorValue(cursor: string): bigint {
  expect(cursor).toMatch(/^\d+$/)
  return BigInt(cursor)
}

export function expectIncreasing(cursors: string[]): void {
  for (let i = 1; i < cursors.length; i++) {
    expect(cursorValue(cursors[i]!) > cursorValue(cursors[i - 1]!)).toBe(true)
  }
}

/** Every entry of `mailbox`, page by page. */
export async function all(store: RelayStore, mailbox: string, page: RetrieveOptions = BIG_PAGE) {
  const out: MailboxEntry[] = []
  let after: string | undefined
  for (;;) {
    const got = await store.retrieve(mailbox, { ...page, after })
    if (got.entries.length === 0) return out
    out.push(...got.entries)
    after = got.cursor
  }
}

/** One page of `mailbox`: `BIG_PAGE` with `over`'s changes. */
export const page = (s: RelayStore, mailbox: string, over: Partial<RetrieveOptions> = {}) =>
  s.retrieve(mailbox, { ...BIG_PAGE, ...over })

export const ids = (entries: MailboxEntry[]) => entries.map((e) => e.messageId)

/** Whether `s` answered the first mailbox of publishing `input` as a duplicate. */
export const duplicate = async (s: RelayStore, input: PublishInput) =>
  (await s.publish(input))[0]!.duplicate

export { publishInput as message }
