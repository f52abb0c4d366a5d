/** A relay stream's types, and the contract between the stream loop and its connectors. */
import type { AbortOptions } from '@agentmsg/core'
import type { Backoff } from '@agentmsg/core/http'
import type { EnvelopeMessage } from './envelope-message.js'

/** One mailbox entry handed to a stream handler, unchecked. */
export interface RelayEntry {
  /** The relay's cursor of this entry: persist it to resume a later stream with `after`. */
  cursor: string
  /**
   * The message JSON value as delivered; an entry that is not I-JSON on its own (PROFILE §1,
   * depth counted from the message's top level) comes as its text, which the pipeline refuses.
   */
  value: unknown
  /** `message_id` as delivered, when readable (unauthenticated: what the ack names). */
  messageId?: string
  /** `from.agent` as delivered, when readable (unauthenticated: what the ack names). */
  from?: string
  /** Acknowledge now (optional: the stream does once the handler resolved; twice is harmless). */
  ack(): Promise<void>
}

/**
 * Handles one entry; resolving completes it (acknowledged), throwing leaves it in the mailbox
 * for after a reconnect (not before the error's `retryAfter`).
 */
export type RelayStreamHandler = (entry: RelayEntry) => void | Promise<void>

/** How a stream receives: Server-Sent Events over `fetch`, or a WebSocket. */
export type StreamMode = 'sse' | 'ws'

/** Options of `RelayClient.stream`. */
export interface StreamOptions extends AbortOptions {
  /** @default 'sse' */
  mode?: StreamMode
  /** Resume after this cursor (a previous handle's `cursor`). @default the oldest held */
  after?: string
  /** The cursor moved past a completed entry; awaited before the next one. */
  onCursor?: (cursor: string) => void | Promise<void>
  /** A connection ended, a handler threw, an ack failed: reported; the stream goes on unless fatal. */
  onError?: (error: unknown) => void
  /** Reconnect backoff (full jitter). @default 500 ms base, 30 s cap */
  backoff?: ConstructorParameters<typeof Backoff>[0]
  /** SSE: reconnect after this long with nothing, not even a comment. @default 45_000 (3 × the §9 15 s cadence) */
  idleTimeoutMs?: number
}

/** A running stream. */
export interface StreamHandle {
  /** The cursor of the last entry completed (handled and acknowledged, queued, or skipped). */
  readonly cursor: string | undefined
  /** Resolves after `close()` or an abort; rejects with what stopped the stream (a relay's 4xx but 429). */
  readonly done: Promise<void>
  /** Drop the connection, wait for the handler in progress and the pending acks. */
  close(): Promise<void>
}

/** Acknowledge one entry, over whichever channel the connection offers. */
export type AckFn = (messageId: string, from: string) => Promise<void>

/** What a connector is given for one connection. */
export interface ConnectContext {
  after: string | undefined
  /** Aborted when the stream closes. */
  signal: AbortSignal
  /** One entry; rejects when the connection must be dropped. `'batch'`: acked by `POST /relay/ack`. */
  deliver(cursor: string | undefined, message: EnvelopeMessage, ack: AckFn | 'batch'): Promise<void>
}

/** Opens one connection; resolves when it ended cleanly, rejects with why it ended otherwise. */
export type Connector = (ctx: ConnectContext) => Promise<void>
