/**
 * The relay client (PROFILE §9): publish, subscribe, retrieve, acknowledge, and a push stream
 * over SSE or WebSocket. Every message the relay hands over is verified again before it is
 * returned (SPEC §5.7.3): the relay is trusted to store and forward, not with integrity.
 */
import {
  AgentMsgError,
  assertRelayUrl,
  parseAgentId,
  parseStrictJson,
  utf8Encode,
  type AbortOptions,
  type KeyResolver,
  type Message,
  type Signer,
  type VerifyOptions,
  type VerifyResult,
} from '@agentmsg/core'
import { WebSocket as PlatformWebSocket } from '#relay-ws'
import { signRequest } from '../http-signature.js'
import { errorFromResponse, readJson, relayEndpoint, relayFetch } from './http.js'
import { publishToRelay, type PublishResult } from './publish.js'
import { sseConnector } from './sse.js'
import {
  runStream,
  type AckFn,
  type RelayHandler,
  type StreamHandle,
  type StreamOptions,
} from './stream.js'
import { checkDelivered, type RejectedDelivery } from './verify-delivery.js'
import { wsConnector, type WebSocketConstructor } from './ws-stream.js'

/** Options for {@link createRelayClient}. */
export interface RelayClientOptions {
  /** The relay base URL, in normal form (`https://relay.example`). */
  relayUrl: string
  /** The agent whose mailbox this client reads (the signer's agent). */
  agent: string
  /** An Ed25519 signer of `agent`, for relay agent auth. */
  signer: Signer
  /** Resolves senders' keys, to verify delivered messages. */
  resolver: KeyResolver
  /** Passed to `verifyMessage` for every delivered message. */
  verifyOptions?: VerifyOptions
  /**
   * The `fetch` for requests. On Node pass `createNodeFetch({ ca })` from
   * `@agentmsg/transport-https/node` (https only, address policy, custom CA).
   * @default globalThis.fetch
   */
  fetch?: typeof fetch
  /**
   * The `fetch` for the SSE stream, which stays open indefinitely: on Node give it no overall
   * timeout (`createNodeFetch({ ca, timeoutMs: 0 })`); the client's idle watchdog replaces it.
   * @default `fetch`
   */
  streamFetch?: typeof fetch
  /**
   * The WebSocket constructor for `mode: 'ws'`.
   * @default the platform's: `globalThis.WebSocket` in browsers, the `ws` package on Node
   */
  WebSocket?: WebSocketConstructor
}

/** Options for {@link RelayClient.subscribe}. */
export interface SubscribeOptions extends AbortOptions {
  /** Topics to receive besides the agent's own mail. */
  topics?: string[]
  /** Have the relay POST messages to this https URL (it must answer the verification challenge). */
  webhook?: string
}

/** Options for {@link RelayClient.retrieve}. */
export interface RetrieveOptions extends AbortOptions {
  /** Start after this cursor. @default the oldest held */
  after?: string
  /** At most this many (the relay clamps to 500). @default the relay's, 100 */
  limit?: number
}

/** A page of the mailbox, verified. */
export interface RetrieveResult {
  /** Messages whose signatures verified, oldest first. */
  messages: Message[]
  /** The verdict for each of `messages`, at the same index. */
  verified: VerifyResult[]
  /**
   * Messages that failed validation or verification: never in `messages`, never acknowledged.
   * One whose error is `unavailable` could not be checked now (a key lookup failed): retrieve
   * again from the same `after` later.
   */
  rejected: RejectedDelivery[]
  /** The relay's cursor after this page; pass it as `after` for the next one. */
  cursor: string | undefined
}

/** Options for {@link RelayClient.publish}. */
export interface ClientPublishOptions extends AbortOptions {
  /** Publish to this relay instead of the client's own (e.g. the recipient's). */
  relayUrl?: string
}

/** A client of one relay, acting for one agent. */
export interface RelayClient {
  readonly relayUrl: string
  readonly agent: string
  /** Publish a signed message (no agent auth: the message's signature is the auth). */
  publish(message: Message, options?: ClientPublishOptions): Promise<PublishResult>
  /** Open the agent's mailbox and/or subscribe to topics. */
  subscribe(options?: SubscribeOptions): Promise<{ subscriptionId: string }>
  /** Delete a subscription. */
  unsubscribe(subscriptionId: string, options?: AbortOptions): Promise<void>
  /** Read a page of the mailbox, every message verified. Nothing is acknowledged. */
  retrieve(options?: RetrieveOptions): Promise<RetrieveResult>
  /** Acknowledge (delete) a message. @throws AgentMsgError `not_found` when nothing matched */
  ack(messageId: string, from: string, options?: AbortOptions): Promise<void>
  /**
   * Receive pushed messages until closed: verified, in order, one at a time, acknowledged after
   * the handler's promise resolved, resumed after disconnects from the last completed cursor.
   * A handler that throws gets the message again after a reconnect (with backoff).
   */
  stream(handler: RelayHandler, options?: StreamOptions): StreamHandle
}

/**
 * A client of one relay for one agent (PROFILE §9).
 *
 * @example
 * const client = createRelayClient({ relayUrl, agent: did, signer, resolver, fetch })
 * await client.subscribe()
 * const handle = client.stream(async ({ message }) => console.log(message.body), { mode: 'sse' })
 * // … later
 * await handle.close()
 */
export function createRelayClient(options: RelayClientOptions): RelayClient {
  const relayUrl = assertRelayUrl(options.relayUrl, 'relayUrl')
  const agent = parseAgentId(options.agent, 'agent').id
  const { signer, resolver } = options
  const fetchFn = options.fetch ?? globalThis.fetch
  const streamFetch = options.streamFetch ?? fetchFn
  const check = { agent, resolver, verifyOptions: options.verifyOptions }

  /** A request signed with relay agent auth; resolves with the response, 2xx or not. */
  const signed = async (
    method: string,
    url: string,
    what: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<Response> => {
    const bytes = body === undefined ? undefined : utf8Encode(JSON.stringify(body))
    const headers: Record<string, string> = {
      Accept: 'application/json',
      ...(await signRequest({ method, url, signer, ...(bytes ? { body: bytes } : {}) })),
    }
    if (bytes) headers['Content-Type'] = 'application/json'
    const res = await relayFetch(
      fetchFn,
      url,
      {
        method,
        headers,
        ...(bytes ? { body: bytes as Uint8Array<ArrayBuffer> } : {}),
        ...(signal ? { signal } : {}),
      },
      what,
    )
    if (res.status < 200 || res.status > 299) throw await errorFromResponse(res, what)
    return res
  }

  const ack = async (messageId: string, from: string, opts: AbortOptions = {}): Promise<void> => {
    const url = relayEndpoint(relayUrl, `/relay/messages/${encodeURIComponent(messageId)}`, {
      agent,
      from,
    })
    const res = await signed('DELETE', url, `ack ${messageId}`, undefined, opts.signal)
    await res.body?.cancel().catch(() => {})
  }
  const httpAck: AckFn = (messageId, from) => ack(messageId, from)

  return {
    relayUrl,
    agent,

    publish(message, opts = {}) {
      return publishToRelay(message, opts.relayUrl ?? relayUrl, {
        fetch: fetchFn,
        ...(opts.signal ? { signal: opts.signal } : {}),
      })
    },

    async subscribe(opts = {}) {
      const request: Record<string, unknown> = {
        subscribe: { agent, ...(opts.topics ? { topics: opts.topics } : {}) },
      }
      if (opts.webhook !== undefined) request.push = { mode: 'webhook', url: opts.webhook }
      const url = relayEndpoint(relayUrl, '/relay/subscribe')
      const res = await signed('POST', url, 'subscribe', request, opts.signal)
      const body = (await readJson(res, 'subscribe')) as { subscription_id?: unknown }
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
      const res = await signed(
        'DELETE',
        url,
        `unsubscribe ${subscriptionId}`,
        undefined,
        opts.signal,
      )
      await res.body?.cancel().catch(() => {})
    },

    async retrieve(opts = {}) {
      const url = relayEndpoint(relayUrl, '/relay/messages', {
        agent,
        after: opts.after,
        limit: opts.limit,
      })
      const res = await signed('GET', url, 'retrieve', undefined, opts.signal)
      const page = parseStrictJson(new Uint8Array(await res.arrayBuffer())) as {
        messages?: unknown
        cursor?: unknown
      }
      if (!Array.isArray(page.messages)) {
        throw new AgentMsgError(
          'internal_error',
          'retrieve: the relay answered without a messages list',
        )
      }
      const checked = await Promise.all(page.messages.map((raw) => checkDelivered(raw, check)))
      const result: RetrieveResult = {
        messages: [],
        verified: [],
        rejected: [],
        cursor: typeof page.cursor === 'string' ? page.cursor : opts.after,
      }
      for (const c of checked) {
        if (c.ok) {
          result.messages.push(c.message)
          result.verified.push(c.verified)
        } else result.rejected.push(c.rejected)
      }
      return result
    },

    ack,

    stream(handler, opts = {}) {
      const mode = opts.mode ?? 'sse'
      const connect =
        mode === 'ws'
          ? wsConnector({
              relayUrl,
              agent,
              signer,
              WebSocket:
                options.WebSocket ?? (PlatformWebSocket as unknown as WebSocketConstructor),
              httpAck,
            })
          : sseConnector({
              relayUrl,
              agent,
              signer,
              fetch: streamFetch,
              ack: httpAck,
              idleTimeoutMs: opts.idleTimeoutMs ?? 45_000,
            })
      return runStream({ connect, handler, check, options: opts })
    },
  }
}
