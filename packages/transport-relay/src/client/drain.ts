/**
 * Receiving by retrieve (PROFILE §9 `GET /relay/messages`): pages read in order, each entry
 * handed to the handler as a stream would, and acknowledged in `POST /relay/ack` batches with
 * one batch in flight. An entry that is not I-JSON on its own comes as its text (the receive
 * pipeline refuses it for good) and is acknowledged like the others, so it never stops the
 * ones behind it.
 */
import type { AbortOptions } from '@agentmsg/core'
import { AckBatcher, type AckEntry, batchable } from './ack-batch.js'
import type { RelayEntry, RelayStreamHandler } from './stream-types.js'

/** One entry of a retrieve page, as delivered. */
export interface RetrievedEntry {
  /** The message JSON value; its text when it is not I-JSON on its own (PROFILE §9 envelopes). */
  value: unknown
  /** `message_id` as delivered, when readable (unauthenticated; what the ack names). */
  messageId?: string
  /** `from.agent` as delivered, when readable (unauthenticated; what the ack names). */
  from?: string
}

/** Options for `RelayClient.drain`. */
export interface DrainOptions extends AbortOptions {
  /** Start after this cursor. @default the oldest held */
  after?: string
  /** Entries per page (the relay clamps to 500). @default the relay's, 100 */
  limit?: number
  /**
   * An acknowledgement batch failed (its entries stay held until they expire or are
   * acknowledged again). @default none: `drain` then rejects with the first such failure
   */
  onError?: (error: unknown) => void
}

/** Where a drain stopped. */
export interface DrainResult {
  /** The cursor after the last page handled in full: pass it as `after` next time. */
  cursor: string | undefined
  /** Entries handed to the handler. */
  handled: number
}

/** What {@link drainMailbox} uses of the client. */
export interface DrainClient {
  retrieve(options: {
    after?: string
    limit?: number
    signal?: AbortSignal
  }): Promise<{ entries: RetrievedEntry[]; cursor: string | undefined }>
  ack(messageId: string, from: string): Promise<void>
  ackBatch(entries: AckEntry[]): Promise<void>
}

/**
 * Read the mailbox from `after` until a page comes back empty. The handler gets one entry at
 * a time (its `cursor` is the cursor of the page it came in); resolving completes it
 * (acknowledged in the next batch); throwing stops the drain, which rejects with that error
 * once the acknowledgements of the entries before it were sent.
 */
export async function drainMailbox(
  client: DrainClient,
  handler: RelayStreamHandler,
  options: DrainOptions = {},
): Promise<DrainResult> {
  let failure: { error: unknown } | undefined
  const report = (error: unknown) => {
    if (options.onError) options.onError(error)
    else failure ??= { error }
  }
  const batcher = new AckBatcher((entries) => client.ackBatch(entries), report)
  let cursor = options.after
  let handled = 0
  try {
    for (;;) {
      const page = await client.retrieve({
        ...(cursor !== undefined ? { after: cursor } : {}),
        ...(options.limit !== undefined ? { limit: options.limit } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      })
      if (page.entries.length === 0) break
      for (const e of page.entries) {
        options.signal?.throwIfAborted()
        const { messageId: id, from } = e
        let acked: Promise<void> | undefined
        const ack = () => {
          if (id === undefined || from === undefined) return Promise.resolve()
          return (acked ??= client.ack(id, from).catch((err: unknown) => {
            acked = undefined
            // 404: acknowledged before, or expired.
            if ((err as { code?: unknown }).code !== 'not_found') throw err
          }))
        }
        const entry: RelayEntry = { cursor: page.cursor ?? '', value: e.value, ack }
        if (id !== undefined) entry.messageId = id
        if (from !== undefined) entry.from = from
        await handler(entry)
        handled++
        if (id === undefined || from === undefined || acked) continue
        if (batchable(id, from)) await batcher.add({ messageId: id, from })
        else await ack().catch(report)
      }
      // A relay that does not move its cursor would hand the same page over forever.
      if (page.cursor === undefined || page.cursor === cursor) break
      cursor = page.cursor
    }
  } finally {
    await batcher.flush()
  }
  if (failure) throw failure.error
  return { cursor, handled }
}
