/**
 * What the RelayStore suite publishes and how it reads stores back: publish inputs with
 * controlled ids, sizes and times, cursor order, and whole-mailbox reads.
 */

import type { MailboxEntry, PublishInput, RelayStore } from '@agentmsg/relay'
import { expect } from 'vitest'

/** The clock of the suite: every publish input is received at this time unless told otherwise. */
export const RELAY_STORE_NOW = 1_700_000_000_000
const NOW = RELAY_STORE_NOW
export const WEEK = 7 * 24 * 3600 * 1000
export const BIG_PAGE = { limit: 500, maxBytes: 8 * 1024 * 1024, now: NOW }

let counter = 0

/** A message to publish; `size` pads the JSON to about that many bytes. */
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

export async function all(
  store: RelayStore,
  mailbox: string,
  page = BIG_PAGE,
): Promise<MailboxEntry[]> {
  const out: MailboxEntry[] = []
  let after: string | undefined
  for (;;) {
    const got = await store.retrieve(mailbox, { ...page, after })
    if (got.entries.length === 0) return out
    out.push(...got.entries)
    after = got.cursor
  }
}

export const ids = (entries: MailboxEntry[]) => entries.map((e) => e.messageId)
