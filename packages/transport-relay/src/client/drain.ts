/**
 * Receiving by retrieve (PROFILE §9 `GET /relay/messages`): pages read in order, each entry
 * handed to the handler as a stream would, acknowledged in `POST /relay/ack` batches with one in
 * flight. An entry that is not I-JSON on its own comes as its text (the pipeline refuses it for
 * good) and is acknowledged like the others, so it never stops the ones behind it.
 */
import { type AbortOptions, isAgentMsgError } from '@agentmsg/core'
import { AckBatcher, type AckEntry, batchable } from './ack-batch.js'
import type { EnvelopeMessage } from './envelope-message.js'
import type { RelayEntry, RelayStreamHandler } from './stream-types.js'

/** One entry of a retrieve page, as delivered. */
export type RetrievedEntry = EnvelopeMessage

/** Options of `RelayClient.drain`. */
export interface DrainOptions extends AbortOptions {
  /** Start after this cursor. @default the oldest held */
  after?: string
  /** Entries per page (the relay clamps to 500). @default the relay's, 100 */
  limit?: number
  /** An ack batch failed (its entries stay held). @default none: `drain` rejects with the first */
  onError?: (error: unknown) => void
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
 * Read the mailbox from `after` until a page comes back empty. The handler gets one entry at a
 * time (its `cursor` is its page's); resolving completes it (acknowledged in the next batch);
 * throwing stops the drain, which rejects with that error once the acks before it were sent.
 */
export async function drainMailbox(
  client: DrainClient,
  handler: RelayStreamHandler,
  options: DrainOptions = {},
): Promise<{ cursor: string | undefined; handled: number }> {
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
      for (const { messageId: id, from, value } of page.entries) {
        options.signal?.throwIfAborted()
        let acked: Promise<void> | undefined
        const ack = () => {
          if (id === undefined || from === undefined) return Promise.resolve()
          acked ??= client.ack(id, from).catch((err: unknown) => {
            acked = undefined
            // 404: acknowledged before, or expired.
            if (!(isAgentMsgError(err) && err.code === 'not_found')) throw err
          })
          return acked
        }
        const entry: RelayEntry = { cursor: page.cursor ?? '', value, ack }
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
