/**
 * The relay client's options and interface (the implementation is ./relay-client.ts).
 */
import type { AbortOptions, Message, Signer } from '@agentmsg/core'
import type { AckEntry } from './ack-batch.js'
import type { DrainOptions, DrainResult, RetrievedEntry } from './drain.js'
import type { RelayPublishResult } from './publish.js'
import type { RelayStreamHandler, StreamHandle, StreamOptions } from './stream-types.js'
import type { WebSocketConstructor } from './ws-stream.js'

/** Options for `createRelayClient`. */
export interface RelayClientOptions {
  /** The relay base URL, in normal form (`https://relay.example`). */
  relayUrl: string
  /** The agent whose mailbox this client reads (the signer's agent). */
  agent: string
  /** An Ed25519 signer of `agent`, for relay agent auth. */
  signer: Signer
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
  /**
   * Requests other than streams are answered and read within this, in ms (PROFILE §4); `0`:
   * no limit of the client's own. @default 30_000
   */
  timeoutMs?: number
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

/** A page of the mailbox, as the relay delivered it. */
export interface RetrieveResult {
  /**
   * The message JSON values, oldest first, unchecked: hand each to the receive pipeline
   * (`{ body: value, transport: 'relay' }`), then acknowledge it. An entry that is not I-JSON
   * on its own (PROFILE §9 envelopes: depth counts from the message's top level) is its text.
   */
  messages: unknown[]
  /** The same entries with the `message_id` and `from.agent` an acknowledgement names. */
  entries: RetrievedEntry[]
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
  publish(message: Message, options?: ClientPublishOptions): Promise<RelayPublishResult>
  /** Open the agent's mailbox and/or subscribe to topics. */
  subscribe(options?: SubscribeOptions): Promise<{ subscriptionId: string }>
  /** Delete a subscription. */
  unsubscribe(subscriptionId: string, options?: AbortOptions): Promise<void>
  /** Read a page of the mailbox, unchecked. Nothing is acknowledged. */
  retrieve(options?: RetrieveOptions): Promise<RetrieveResult>
  /** Acknowledge (delete) a message. @throws AgentMsgError `not_found` when nothing matched */
  ack(messageId: string, from: string, options?: AbortOptions): Promise<void>
  /**
   * Acknowledge many at once (`POST /relay/ack`, 500 per request); entries that match nothing
   * are skipped. Resolves with how many entries the relay removed.
   */
  ackMany(entries: readonly AckEntry[], options?: AbortOptions): Promise<{ removed: number }>
  /**
   * Receive by retrieve: pages from `after` until one comes back empty, each entry handed to
   * `handler` in order and acknowledged in batches (one in flight) once it resolved.
   */
  drain(handler: RelayStreamHandler, options?: DrainOptions): Promise<DrainResult>
  /**
   * Receive pushed entries until closed: in order, one at a time, acknowledged after the
   * handler's promise resolved, resumed after disconnects from the last completed cursor. A
   * handler that throws gets the entry again after a reconnect (with backoff).
   */
  stream(handler: RelayStreamHandler, options?: StreamOptions): StreamHandle
}
