/**
 * What every use of a relay needs (PROFILE §9): signed requests under a deadline and byte caps,
 * subscribe, acknowledge (one, or a `POST /relay/ack` batch) and the push stream. The full
 * client (./relay-client.ts) adds publish, retrieve and drain; the relay transport uses only
 * this, so a browser agent's bundle carries no page parsing it never runs.
 */

import { type AbortOptions, AgentMsgError, parseAgentId } from '@agentmsg/core'
import { utf8Encode } from '@agentmsg/core/encoding'
import { assertRelayUrl, signRequest } from '@agentmsg/core/http'
import type { AckEntry } from './ack-batch.js'
import { DEFAULT_TIMEOUT_MS, exchange, readJson, relayEndpoint } from './http.js'
import type { RelayClientOptions, SubscribeOptions } from './relay-client-types.js'
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

/**
 * WebSocket streams are imported on first use: the default mode is SSE, so most agents never
 * load them (issue 12: a browser agent's bundle).
 */
const loadWs = () => import('./ws-lazy.js')

/** SSE: the relay comments at least every 15 s (PROFILE §9); three missed ones end the wait. */
export const DEFAULT_STREAM_IDLE_MS = 45_000

/** The shared part of a relay client (see the module comment). */
export interface RelayCore {
  readonly relayUrl: string
  readonly agent: string
  readonly fetch: typeof fetch
  readonly timeoutMs: number
  /** A request signed with relay agent auth, answered and read within the timeout. */
  signed<T>(
    method: string,
    url: string,
    what: string,
    body: unknown,
    signal: AbortSignal | undefined,
    read: (res: Response, signal: AbortSignal) => Promise<T>,
  ): Promise<T>
  subscribe(options?: SubscribeOptions): Promise<{ subscriptionId: string }>
  unsubscribe(subscriptionId: string, options?: AbortOptions): Promise<void>
  ack(messageId: string, from: string, options?: AbortOptions): Promise<void>
  /** One `POST /relay/ack` (1–500 entries); resolves with how many the relay removed. */
  ackBatch(entries: readonly AckEntry[], signal?: AbortSignal): Promise<number>
  stream(handler: RelayStreamHandler, options?: StreamOptions): StreamHandle
}

/** The shared part of a relay client for `options`. */
export function relayCore(options: RelayClientOptions): RelayCore {
  const relayUrl = assertRelayUrl(options.relayUrl, 'relayUrl')
  const agent = parseAgentId(options.agent, 'agent').id
  const { signer } = options
  const fetchFn = options.fetch ?? globalThis.fetch
  const streamFetch = options.streamFetch ?? fetchFn
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS

  /** A request signed with relay agent auth, answered and read within the timeout. */
  const signed: RelayCore['signed'] = async <T>(
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
      ...(await signRequest({ method, url, signer, ...(bytes ? { body: bytes } : {}) })),
    }
    if (bytes) headers['Content-Type'] = 'application/json'
    return exchange({
      fetch: fetchFn,
      url,
      init: { method, headers, ...(bytes ? { body: bytes as Uint8Array<ArrayBuffer> } : {}) },
      what,
      timeoutMs,
      signal,
      read,
    })
  }
  const discard = async (res: Response) => void (await res.body?.cancel().catch(() => {}))

  const ack = async (messageId: string, from: string, opts: AbortOptions = {}): Promise<void> => {
    const url = relayEndpoint(relayUrl, `/relay/messages/${encodeURIComponent(messageId)}`, {
      agent,
      from,
    })
    await signed('DELETE', url, `ack ${messageId}`, undefined, opts.signal, discard)
  }
  const httpAck: AckFn = (messageId, from) => ack(messageId, from)

  /** One `POST /relay/ack`; a body over the relay's 1 MiB (very long agent URLs) is halved. */
  const ackBatch = async (entries: readonly AckEntry[], signal?: AbortSignal): Promise<number> => {
    const body = {
      agent,
      acks: entries.map((e) => ({ message_id: e.messageId, from: e.from })),
    }
    if (entries.length > 1 && JSON.stringify(body).length > 512 * 1024) {
      const half = Math.ceil(entries.length / 2)
      return (
        (await ackBatch(entries.slice(0, half), signal)) +
        (await ackBatch(entries.slice(half), signal))
      )
    }
    const url = relayEndpoint(relayUrl, '/relay/ack')
    const what = `ack ${entries.length} entries`
    return signed('POST', url, what, body, signal, async (res, s) => {
      const reply = (await readJson(res, what, s)) as { removed?: unknown }
      return typeof reply.removed === 'number' ? reply.removed : 0
    })
  }

  /** One WebSocket connector per stream (it keeps acks across reconnects), loaded on first connect. */
  const lazyWsConnector = (): Connector => {
    let loading: Promise<Connector> | undefined
    return async (ctx) => {
      const current = (loading ??= loadWs().then(({ wsConnector, PlatformWebSocket }) =>
        wsConnector({
          relayUrl,
          agent,
          signer,
          WebSocket: options.WebSocket ?? (PlatformWebSocket as unknown as WebSocketConstructor),
          httpAck,
        }),
      ))
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

    async subscribe(opts = {}) {
      const request: Record<string, unknown> = {
        subscribe: { agent, ...(opts.topics ? { topics: opts.topics } : {}) },
      }
      if (opts.webhook !== undefined) request.push = { mode: 'webhook', url: opts.webhook }
      const url = relayEndpoint(relayUrl, '/relay/subscribe')
      const body = (await signed('POST', url, 'subscribe', request, opts.signal, (res, s) =>
        readJson(res, 'subscribe', s),
      )) as { subscription_id?: unknown }
      if (typeof body.subscription_id !== 'string') {
        throw new AgentMsgError(
          'internal_error',
          'subscribe: the relay answered without a subscription_id',
        )
      }
      return { subscriptionId: body.subscription_id }
    },

    async unsubscribe(subscriptionId, opts = {}) {
      const url = relayEndpoint(relayUrl, `/relay/subscribe/${encodeURIComponent(subscriptionId)}`)
      await signed('DELETE', url, `unsubscribe ${subscriptionId}`, undefined, opts.signal, discard)
    },

    stream(handler, opts = {}) {
      const mode = opts.mode ?? 'sse'
      const connect =
        mode === 'ws'
          ? lazyWsConnector()
          : sseConnector({
              relayUrl,
              agent,
              signer,
              fetch: streamFetch,
              idleTimeoutMs: opts.idleTimeoutMs ?? DEFAULT_STREAM_IDLE_MS,
            })
      return runStream({
        connect,
        handler,
        options: opts,
        ackOne: httpAck,
        ackMany: async (entries) => void (await ackBatch(entries)),
      })
    },
  }
}
