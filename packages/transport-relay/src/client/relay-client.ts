/**
 * The relay client (PROFILE §9). What the relay hands over is returned as it came: relays are
 * trusted to store and forward, not with integrity (SPEC §5.7.3), so the caller's receive
 * pipeline validates and verifies every message, as for every transport.
 */
import {
  type AbortOptions,
  AgentMsgError,
  type Message,
  PROFILE,
  parseAgentId,
} from '@agentmsg/core'
import type { AckEntry } from './ack-batch.js'
import { type DrainOptions, drainMailbox, type RetrievedEntry } from './drain.js'
import { parsePage } from './envelope.js'
import { readCapped, relayEndpoint } from './http.js'
import { publishToRelay } from './publish.js'
import { type RelayClientOptions, relayCore, type SubscribeOptions } from './relay-core.js'
import type { RelayStreamHandler, StreamHandle, StreamOptions } from './stream-types.js'

/** A page of the mailbox, as delivered. */
export interface RetrieveResult {
  /**
   * The message JSON values, oldest first, unchecked: hand each to the receive pipeline, then
   * acknowledge it. An entry that is not I-JSON on its own (PROFILE §9 envelopes) is its text.
   */
  messages: unknown[]
  /** The same entries with the `message_id` and `from.agent` an acknowledgement names. */
  entries: RetrievedEntry[]
  /** The relay's cursor after this page: pass it as `after` for the next one. */
  cursor: string | undefined
}

/** A client of one relay, acting for one agent. */
export interface RelayClient {
  readonly relayUrl: string
  readonly agent: string
  /** Publish a signed message, here or to `relayUrl` (no agent auth: the signature is the auth). */
  publish(
    message: Message,
    options?: AbortOptions & { relayUrl?: string },
  ): Promise<{ messageId: string }>
  /** Open the agent's mailbox and/or subscribe to topics, or have a `webhook` pushed to. */
  subscribe(options?: SubscribeOptions): Promise<{ subscriptionId: string }>
  unsubscribe(subscriptionId: string, options?: AbortOptions): Promise<void>
  /** Read a page of the mailbox from `after` (`limit`: the relay clamps to 500), unchecked; nothing is acknowledged. */
  retrieve(options?: AbortOptions & { after?: string; limit?: number }): Promise<RetrieveResult>
  /** Acknowledge (delete) a message. @throws AgentMsgError `not_found` when nothing matched */
  ack(messageId: string, from: string, options?: AbortOptions): Promise<void>
  /** Acknowledge many (`POST /relay/ack`, 500 a request); entries that match nothing are skipped. */
  ackMany(entries: readonly AckEntry[], options?: AbortOptions): Promise<{ removed: number }>
  /**
   * Receive by retrieve: pages from `after` until one comes back empty, each entry handed to
   * `handler` in order and acknowledged in batches once it resolved.
   */
  drain(
    handler: RelayStreamHandler,
    options?: DrainOptions,
  ): Promise<{ cursor: string | undefined; handled: number }>
  /**
   * Receive pushed entries until closed: in order, one at a time, acknowledged once the
   * handler resolved, resumed after disconnects from the last completed cursor. A handler that
   * throws gets the entry again after a reconnect (with backoff).
   */
  stream(handler: RelayStreamHandler, options?: StreamOptions): StreamHandle
}

/**
 * A client of one relay for one agent (PROFILE §9).
 *
 * @example
 * const client = createRelayClient({ relayUrl, agent: did, signer, fetch })
 * await client.subscribe()
 * const handle = client.stream(async ({ value }) => {
 *   const outcome = await receiver.receive({ body: value, transport: 'relay' })
 *   if (outcome.status === 'refused' && outcome.retry) throw outcome.error // delivered again later
 * })
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
      const entries: RetrievedEntry[] = parsed.messages
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
    drain(handler, opts = {}) {
      const client = {
        retrieve,
        ack: (id: string, from: string) => core.ack(id, from),
        ackBatch: async (entries: AckEntry[]) => void (await core.ackBatch(entries)),
      }
      return drainMailbox(client, handler, opts)
    },
    stream: core.stream,
  }
}
