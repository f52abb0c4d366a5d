/**
 * The types of a relay stream: what a handler gets, the options, the running handle, and the
 * contract between the shared stream loop (./stream.ts) and its SSE and WebSocket connectors.
 */
import type { AbortOptions } from '@agentmsg/core'
import type { BackoffOptions } from './backoff.js'
import type { EnvelopeMessage } from './envelope-message.js'

/** One mailbox entry handed to a stream handler, unchecked. */
export interface RelayEntry {
  /** The relay's cursor of this entry. Persist it to resume a later stream with `after`. */
  cursor: string
  /**
   * The message JSON value as the relay delivered it (SSE `data`, WebSocket `message`, a page's
   * entry). An entry that is not I-JSON on its own (PROFILE §1, depth counted from the message's
   * own top level) comes as its text: the receive pipeline refuses it for good.
   */
  value: unknown
  /** `message_id` as delivered, when readable (unauthenticated; what the ack names). */
  messageId?: string
  /** `from.agent` as delivered, when readable (unauthenticated; what the ack names). */
  from?: string
  /**
   * Acknowledge now (the relay deletes the entry). Optional: the stream acknowledges by itself
   * once the handler's promise resolved; acknowledging twice is harmless. Entries without a
   * readable `messageId` and `from` cannot be acknowledged and are skipped by their cursor.
   */
  ack(): Promise<void>
}

/**
 * Handles one entry; the stream waits for it before the next one. Resolving completes the
 * entry (it is acknowledged); throwing leaves it in the mailbox, to be delivered again after a
 * reconnect (no sooner than the error's `retryAfter`, when it has one).
 */
export type RelayStreamHandler = (entry: RelayEntry) => void | Promise<void>

/** How a stream receives: Server-Sent Events over `fetch`, or a WebSocket. */
export type StreamMode = 'sse' | 'ws'

/** Options for `RelayClient.stream`. */
export interface StreamOptions extends AbortOptions {
  /** @default 'sse' */
  mode?: StreamMode
  /** Resume after this cursor (a previous handle's `cursor`). @default the oldest held */
  after?: string
  /**
   * The cursor moved past a completed entry: persist it to resume from there later. Awaited
   * before the next entry; a failure goes to `onError` and the stream goes on.
   */
  onCursor?: (cursor: string) => void | Promise<void>
  /**
   * A connection ended with an error, a handler threw, or an acknowledgement failed. The stream
   * carries on (reconnecting) unless the error is fatal; fatal errors also reject `done`.
   */
  onError?: (error: unknown) => void
  /** Reconnect backoff. @default full jitter, 500 ms base, 30 s cap */
  backoff?: BackoffOptions
  /**
   * SSE: reconnect when nothing (not even the relay's keep-alive comment, sent at least every
   * 15 s) arrived for this long while waiting (PROFILE §4: the comment cadence, with margin).
   * @default 45_000
   */
  idleTimeoutMs?: number
  /**
   * WebSocket acknowledgements that fall back to HTTP (the socket closed while a handler ran)
   * in flight at once. 1: each is answered before the next message is handled; more: the next
   * message is handled meanwhile, and `close()` waits for them. SSE acknowledges in batches
   * with `POST /relay/ack` instead, one batch in flight (PROFILE §9). @default 1
   */
  ackConcurrency?: number
}

/** A running stream. */
export interface StreamHandle {
  /**
   * The cursor of the last entry completed: handled, and acknowledged (WebSocket) or queued for
   * the next acknowledgement batch (SSE); or skipped, when no acknowledgement can name it.
   */
  readonly cursor: string | undefined
  /**
   * Settles when the stream stopped: resolves after `close()` or the signal's abort, rejects
   * with the error that stopped it otherwise (a 4xx other than 429 from the relay, such as
   * `forbidden`, or a signer the relay cannot use).
   */
  readonly done: Promise<void>
  /**
   * Stop: drops the connection, waits for the handler in progress and for the pending
   * acknowledgements to be sent, then resolves.
   */
  close(): Promise<void>
}

/** Acknowledge one entry, over whichever channel the connection offers. */
export type AckFn = (messageId: string, from: string) => Promise<void>

/** What a connector is given for one connection. */
export interface ConnectContext {
  /** Resume after this cursor (`undefined`: from the oldest held message). */
  after: string | undefined
  /** Aborted when the stream closes. */
  signal: AbortSignal
  /**
   * Hand over one delivered entry; resolves once it was completed. Rejects when the connection
   * must be dropped and resumed later (the handler failed). `ack` is how to acknowledge it:
   * over this connection, or `'batch'` for the stream's `POST /relay/ack` batches.
   */
  deliver(cursor: string | undefined, message: EnvelopeMessage, ack: AckFn | 'batch'): Promise<void>
}

/** Opens one connection; resolves when it ended cleanly, rejects with why it ended otherwise. */
export type Connector = (ctx: ConnectContext) => Promise<void>
