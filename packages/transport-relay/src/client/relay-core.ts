/**
 * What listening on a relay needs (PROFILE §9): signed requests, subscribe, acknowledge, the
 * push stream. The client adds publish, retrieve and drain, which a listening agent never loads.
 */
import {
  type AbortOptions,
  AgentMsgError,
  PROFILE,
  parseAgentId,
  type Signer,
} from '@agentmsg/core'
import { assertRelayUrl, httpRequest, utf8Encode } from '@agentmsg/core/http'
import { signRequest } from '@agentmsg/core/receive'
import type { AckEntry } from './ack-batch.js'
import { readReply, relayEndpoint } from './http.js'
import { sseConnector } from './sse.js'
import { runStream } from './stream.js'
import type {
  AckFn,
  Connector,
  RelayStreamHandler,
  StreamHandle,
  StreamOptions,
} from './stream-types.js'
import type { WebSocketConstructor } from './ws-stream.js'

/** WebSocket streams are imported on first use: the default is SSE, so most agents never load them. */
const loadWs = () => import('./ws-lazy.js')

/** SSE: the relay comments at least every 15 s (PROFILE §9); three missed ones end the wait. */
export const STREAM_IDLE_MS = 3 * PROFILE.streamCommentMs

/** Options of `createRelayClient`. */
export interface RelayClientOptions {
  /** The relay base URL, in normal form (`https://relay.example`). */
  relayUrl: string
  /** The agent whose mailbox this client reads (the signer's agent). */
  agent: string
  /** An Ed25519 signer of `agent`, for relay agent auth. */
  signer: Signer
  /** On Node: `createNodeFetch({ ca })` (https only, the address policy). @default globalThis.fetch */
  fetch?: typeof fetch | undefined
  /** For SSE streams: on Node one without an overall timeout (`timeoutMs: 0`). @default `fetch` */
  streamFetch?: typeof fetch | undefined
  /** For `mode: 'ws'`. @default the platform's: the global one, the `ws` package on Node */
  WebSocket?: WebSocketConstructor | undefined
  /** Requests other than streams are answered and read within this (ms; 0: none). @default 30_000 (PROFILE §4) */
  timeoutMs?: number | undefined
}

/** Options of `RelayClient.subscribe`. */
export interface SubscribeOptions extends AbortOptions {
  /** Topics to receive besides the agent's own mail. */
  topics?: string[]
  /** Have the relay POST messages to this https URL (it must answer the verification challenge). */
  webhook?: string
}

export function relayCore(options: RelayClientOptions) {
  const relayUrl = assertRelayUrl(options.relayUrl, 'relayUrl')
  const agent = parseAgentId(options.agent, 'agent').id
  const { signer } = options
  const fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const timeoutMs = options.timeoutMs ?? PROFILE.requestTimeoutMs

  /** A request signed with relay agent auth (PROFILE §9), answered and read within the timeout. */
  const signed = async <T>(
    method: string,
    url: string,
    what: string,
    body: unknown,
    signal: AbortSignal | undefined,
    read: (res: Response, signal: AbortSignal) => Promise<T>,
  ): Promise<T> => {
    const bytes = body === undefined ? undefined : utf8Encode(JSON.stringify(body))
    const headers: Record<string, string> = {
      Accept: 'application/json',
      ...(await signRequest({ method, url, signer, body: bytes })),
      ...(bytes ? { 'Content-Type': 'application/json' } : {}),
    }
    const init = { fetch: fetchFn, method, headers, body: bytes as BodyInit | undefined }
    return httpRequest(url, { ...init, timeoutMs, signal, what }, read)
  }
  const discard = async (res: Response) => void (await res.body?.cancel().catch(() => {}))

  const ack = async (messageId: string, from: string, opts: AbortOptions = {}): Promise<void> => {
    const path = `/relay/messages/${encodeURIComponent(messageId)}`
    const url = relayEndpoint(relayUrl, path, { agent, from })
    await signed('DELETE', url, `ack ${messageId}`, undefined, opts.signal, discard)
  }
  const httpAck: AckFn = (messageId, from) => ack(messageId, from)

  /** One `POST /relay/ack`; resolves with how many the relay removed. */
  const ackBatch = async (entries: readonly AckEntry[], signal?: AbortSignal): Promise<number> => {
    const acks = entries.map((e) => ({ message_id: e.messageId, from: e.from }))
    const body = { agent, acks }
    // Well under the relay's body cap (PROFILE §6), even with very long agent URLs: else halve.
    if (entries.length > 1 && JSON.stringify(body).length > PROFILE.maxMessageBytes / 2) {
      const half = Math.ceil(entries.length / 2)
      const first = await ackBatch(entries.slice(0, half), signal)
      return first + (await ackBatch(entries.slice(half), signal))
    }
    const what = `ack ${entries.length} entries`
    const url = relayEndpoint(relayUrl, '/relay/ack')
    return signed('POST', url, what, body, signal, async (res, s) => {
      const { removed } = await readReply(res, what, s)
      return typeof removed === 'number' ? removed : 0
    })
  }

  /** One WebSocket connector per stream (it keeps acks across reconnects), loaded on first connect. */
  const lazyWsConnector = (): Connector => {
    let loading: Promise<Connector> | undefined
    return async (ctx) => {
      const current = (loading ??= loadWs().then(({ wsConnector, PlatformWebSocket }) => {
        const WebSocket =
          options.WebSocket ?? (PlatformWebSocket as unknown as WebSocketConstructor)
        return wsConnector({ relayUrl, agent, signer, WebSocket, httpAck })
      }))
      // A chunk that failed to load is tried again on the next connect (the stream backs off).
      current.catch(() => {
        if (loading === current) loading = undefined
      })
      return (await current)(ctx)
    }
  }

  return {
    relayUrl,
    agent,
    fetch: fetchFn,
    timeoutMs,
    signed,
    ack,
    ackBatch,

    async subscribe(opts: SubscribeOptions = {}): Promise<{ subscriptionId: string }> {
      const request: Record<string, unknown> = {
        subscribe: { agent, ...(opts.topics ? { topics: opts.topics } : {}) },
      }
      if (opts.webhook !== undefined) request.push = { mode: 'webhook', url: opts.webhook }
      const url = relayEndpoint(relayUrl, '/relay/subscribe')
      const reply = await signed('POST', url, 'subscribe', request, opts.signal, (res, s) =>
        readReply(res, 'subscribe', s),
      )
      if (typeof reply.subscription_id !== 'string') {
        const text = 'subscribe: the relay answered without a subscription_id'
        throw new AgentMsgError('internal_error', text)
      }
      return { subscriptionId: reply.subscription_id }
    },

    async unsubscribe(subscriptionId: string, opts: AbortOptions = {}): Promise<void> {
      const url = relayEndpoint(relayUrl, `/relay/subscribe/${encodeURIComponent(subscriptionId)}`)
      await signed('DELETE', url, `unsubscribe ${subscriptionId}`, undefined, opts.signal, discard)
    },

    stream(handler: RelayStreamHandler, opts: StreamOptions = {}): StreamHandle {
      const connect =
        opts.mode === 'ws'
          ? lazyWsConnector()
          : sseConnector({
              relayUrl,
              agent,
              signer,
              fetch: options.streamFetch ?? fetchFn,
              idleTimeoutMs: opts.idleTimeoutMs ?? STREAM_IDLE_MS,
            })
      const ackMany = async (entries: AckEntry[]) => void (await ackBatch(entries))
      return runStream({ connect, handler, options: opts, ackOne: httpAck, ackMany })
    },
  }
}
