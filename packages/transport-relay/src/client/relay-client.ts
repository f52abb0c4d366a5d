/**
 * The relay client (PROFILE §9): publish, subscribe, retrieve, acknowledge, and a push stream
 * over SSE or WebSocket. What the relay hands over is returned as it came: the relay is trusted
 * to store and forward, not with integrity (SPEC §5.7.3), so the caller's receive pipeline
 * validates and verifies every message, as it does for every transport.
 */
import { AgentMsgError, parseAgentId } from '@agentmsg/core'
import { MAX_ACK_BATCH } from './ack-batch.js'
import { drainMailbox, type RetrievedEntry } from './drain.js'
import { parsePage } from './envelope.js'
import { MAX_PAGE_RESPONSE_BYTES, readCapped, relayEndpoint } from './http.js'
import { publishToRelay } from './publish.js'
import type {
  RelayClient,
  RelayClientOptions,
  RetrieveOptions,
  RetrieveResult,
} from './relay-client-types.js'
import { relayCore } from './relay-core.js'

export type {
  ClientPublishOptions,
  RelayClient,
  RelayClientOptions,
  RetrieveOptions,
  RetrieveResult,
  SubscribeOptions,
} from './relay-client-types.js'
export { DEFAULT_STREAM_IDLE_MS } from './relay-core.js'

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
 * // … later
 * await handle.close()
 */
export function createRelayClient(options: RelayClientOptions): RelayClient {
  const core = relayCore(options)
  const { relayUrl, agent, signed } = core

  /** One page; `undefined` when an entry must be read alone (see {@link parsePage}). */
  const page = async (
    after: string | undefined,
    limit: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<RetrieveResult | undefined> => {
    const url = relayEndpoint(relayUrl, '/relay/messages', { agent, after, limit })
    return signed('GET', url, 'retrieve', undefined, signal, async (res, s) => {
      const bytes = await readCapped(res, MAX_PAGE_RESPONSE_BYTES, 'retrieve', s)
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
      const parsed = parsePage(text, { asText: invalid })
      if (parsed.spilled && !alone) return undefined
      const entries: RetrievedEntry[] = parsed.messages
      return {
        messages: entries.map((e) => e.value),
        entries,
        cursor: typeof parsed.cursor === 'string' ? parsed.cursor : after,
      }
    })
  }

  const retrieve = async (opts: RetrieveOptions = {}): Promise<RetrieveResult> => {
    const found = await page(opts.after, opts.limit, opts.signal)
    if (found) return found
    // One entry could not be told apart from its neighbours: read the first one alone, so the
    // page stops at it or it is the page (then it is handed over as its text).
    const alone = await page(opts.after, 1, opts.signal)
    if (alone) return alone
    throw new AgentMsgError(
      'internal_error',
      'retrieve: the relay sent an entry that is unreadable',
    )
  }

  return {
    relayUrl,
    agent,

    publish(message, opts = {}) {
      return publishToRelay(message, opts.relayUrl ?? relayUrl, {
        fetch: core.fetch,
        timeoutMs: core.timeoutMs,
        ...(opts.signal ? { signal: opts.signal } : {}),
      })
    },

    subscribe: core.subscribe,
    unsubscribe: core.unsubscribe,
    retrieve,
    ack: core.ack,

    async ackMany(entries, opts = {}) {
      entries.forEach((e, i) => parseAgentId(e.from, `entries[${i}].from`))
      let removed = 0
      for (let i = 0; i < entries.length; i += MAX_ACK_BATCH) {
        removed += await core.ackBatch(entries.slice(i, i + MAX_ACK_BATCH), opts.signal)
      }
      return { removed }
    },

    drain(handler, opts = {}) {
      return drainMailbox(
        {
          retrieve,
          ack: (id, from) => core.ack(id, from),
          ackBatch: async (entries) => void (await core.ackBatch(entries)),
        },
        handler,
        opts,
      )
    },

    stream: core.stream,
  }
}
