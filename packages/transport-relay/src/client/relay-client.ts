/**
 * The relay client (PROFILE §9). Entries are returned as they came: relays are not trusted with
 * integrity (SPEC §5.7.3), the caller's receive pipeline verifies every message.
 */
import {
  type AbortOptions,
  AgentMsgError,
  type Message,
  PROFILE,
  parseAgentId,
} from '@agentmsg/core'
import { AckBatcher, type AckEntry, batchable, entryAck } from './ack-batch.js'
import { parsePage } from './envelope.js'
import type { EnvelopeMessage } from './envelope-message.js'
import { readCapped, relayEndpoint } from './http.js'
import { publishToRelay } from './publish.js'
import { type RelayClientOptions, relayCore, type SubscribeOptions } from './relay-core.js'
import type { RelayStreamHandler, StreamHandle, StreamOptions } from './stream-types.js'

/** Options of `RelayClient.drain`. */
export interface DrainOptions extends AbortOptions {
  /** Start after this cursor. @default the oldest held */
  after?: string
  /** Entries per page (the relay clamps to 500). @default the relay's, 100 */
  limit?: number
  /** An ack batch failed (its entries stay held). @default none: `drain` rejects with the first */
  onError?: (error: unknown) => void
}

/** A page of the mailbox, as delivered. */
export interface RetrieveResult {
  /** The message values, oldest first, unchecked (an entry that is not I-JSON: its text). */
  messages: unknown[]
  /** The same, with the `message_id` and `from.agent` an acknowledgement names. */
  entries: EnvelopeMessage[]
  /** Pass it as `after` for the next page. */
  cursor: string | undefined
}

/** A client of one relay, acting for one agent. */
export interface RelayClient {
  /** The relay's base URL. */
  readonly relayUrl: string
  /** The agent it acts for. */
  readonly agent: string
  /** Publish a signed message, here or to `relayUrl` (no agent auth: the signature is the auth). */
  publish(
    message: Message,
    options?: AbortOptions & { relayUrl?: string },
  ): Promise<{ messageId: string }>
  /** Open the agent's mailbox and/or subscribe to topics, or have a `webhook` pushed to. */
  subscribe(options?: SubscribeOptions): Promise<{ subscriptionId: string }>
  /** Delete a subscription of the agent. */
  unsubscribe(subscriptionId: string, options?: AbortOptions): Promise<void>
  /** Read a page of the mailbox from `after` (`limit`: the relay clamps to 500), unchecked; nothing is acknowledged. */
  retrieve(options?: AbortOptions & { after?: string; limit?: number }): Promise<RetrieveResult>
  /** Acknowledge (delete) a message. @throws AgentMsgError `not_found` when nothing matched */
  ack(messageId: string, from: string, options?: AbortOptions): Promise<void>
  /** Acknowledge many (`POST /relay/ack`, 500 a request); entries that match nothing are skipped. */
  ackMany(entries: readonly AckEntry[], options?: AbortOptions): Promise<{ removed: number }>
  /** Retrieve pages until one is empty, each entry handled in order, acknowledged in batches. */
  drain(
    handler: RelayStreamHandler,
    options?: DrainOptions,
  ): Promise<{ cursor: string | undefined; handled: number }>
  /**
   * Receive pushed entries until closed, one at a time, each acknowledged once the handler
   * resolved, resumed after the last completed cursor (a handler that throws gets it again).
   */
  stream(handler: RelayStreamHandler, options?: StreamOptions): StreamHandle
}

/**
 * A client of one relay for one agent (PROFILE §9).
 *
 * @example
 * const client = createRelayClient({ relayUrl, agent: did, signer, fetch })
 * await client.subscribe()
 * client.stream(async ({ value }) => void (await receiver.receive({ body: value, transport: 'relay' })))
 */
export function createRelayClient(options: RelayClientOptions): RelayClient {
  const core = relayCore(options)
  const { relayUrl, agent, signed } = core

  /** One page; `undefined` when an entry must be read alone. */
  const page = (after?: string, limit?: number, signal?: AbortSignal) => {
    const url = relayEndpoint(relayUrl, '/relay/messages', { agent, after, limit })
    return signed('GET', url, 'retrieve', undefined, signal, async (res, s) => {
      const bytes = await readCapped(res, PROFILE.pageMaxBytes, 'retrieve', s)
      const alone = limit === 1
      let text: string
      let invalid = false
      try {
        text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
      } catch {
        // Invalid UTF-8 in some entry (PROFILE §1): find it alone, then hand it over as text.
        if (!alone) return undefined
        invalid = true
        text = new TextDecoder().decode(bytes)
      }
      const parsed = await parsePage(text, invalid)
      if (parsed.spilled && !alone) return undefined
      const { messages: entries } = parsed
      const cursor = typeof parsed.cursor === 'string' ? parsed.cursor : after
      return { messages: entries.map((e) => e.value), entries, cursor }
    })
  }

  const retrieve: RelayClient['retrieve'] = async (opts = {}) => {
    // An entry that could not be told apart from its neighbours: read the first one alone, so
    // the page stops before it or it is the page (then handed over as its text).
    const found =
      (await page(opts.after, opts.limit, opts.signal)) ?? (await page(opts.after, 1, opts.signal))
    if (found) return found
    throw new AgentMsgError(
      'internal_error',
      'retrieve: the relay sent an entry that is unreadable',
    )
  }

  return {
    relayUrl,
    agent,
    async publish(message, opts = {}) {
      const { fetch, timeoutMs } = core
      const { messageId } = await publishToRelay(message, opts.relayUrl ?? relayUrl, {
        fetch,
        timeoutMs,
        signal: opts.signal,
      })
      return { messageId }
    },
    subscribe: core.subscribe,
    unsubscribe: core.unsubscribe,
    retrieve,
    ack: core.ack,
    async ackMany(entries, opts = {}) {
      entries.forEach((e, i) => parseAgentId(e.from, `entries[${i}].from`))
      let removed = 0
      for (let i = 0; i < entries.length; i += PROFILE.maxAcks) {
        removed += await core.ackBatch(entries.slice(i, i + PROFILE.maxAcks), opts.signal)
      }
      return { removed }
    },
    async drain(handler, opts = {}) {
      // Entries are handed over as a stream would; one that is not I-JSON comes as its text (the
      // pipeline refuses it for good) and is acknowledged too, so it never stops the others.
      let failure: { error: unknown } | undefined
      const report = (error: unknown) => {
        if (opts.onError) opts.onError(error)
        else failure ??= { error }
      }
      const batcher = new AckBatcher(async (e) => void (await core.ackBatch(e)), report)
      let cursor = opts.after
      let handled = 0
      try {
        for (;;) {
          const { entries, cursor: next } = await retrieve({ ...opts, after: cursor })
          if (entries.length === 0) break
          for (const message of entries) {
            const { messageId: id, from } = message
            opts.signal?.throwIfAborted()
            const named = id !== undefined && from !== undefined
            const entry = entryAck(named ? () => core.ack(id, from) : undefined)
            await handler({ ...message, cursor: next ?? '', ack: entry.ack })
            handled++
            if (!named || entry.pending) continue
            if (batchable(id, from)) await batcher.add({ messageId: id, from })
            else await entry.ack().catch(report)
          }
          // A relay that does not move its cursor would hand the same page over forever.
          if (next === undefined || next === cursor) break
          cursor = next
        }
      } finally {
        await batcher.flush()
      }
      if (failure) throw failure.error
      return { cursor, handled }
    },
    stream: core.stream,
  }
}
