/**
 * The relay as a core `Transport` (PROFILE §9): `send` publishes to the recipient's relays
 * with client failover, `listen` streams the agent's own mailboxes into the receive pipeline.
 * It is also a worked example of the Transport contract for anyone writing their own.
 */
import type {
  AbortOptions,
  DeliveryHandler,
  DeliveryReceipt,
  DeliveryTarget,
  Message,
  Transport,
  TransportComponents,
  TransportFactory,
} from '@agentmsg/core'
import { invalidFormat } from '@agentmsg/core/http'
import type { TransportSendOptions } from '@agentmsg/core/message'
import type { BackoffOptions } from './backoff.js'
import type { MailboxListener } from './mailbox-listener.js'
import { publishWithFailover } from './publish.js'
import { relayError } from './relay-error.js'
import type { StreamMode } from './stream.js'
import type { WebSocketConstructor } from './ws-stream.js'

/**
 * Streams, acknowledgements and envelope parsing are imported when `listen` is first called:
 * sending needs none of them, and a browser agent starts sending before its streams are up
 * (issue 12: what it loads up front).
 */
const loadListening = () => import('./listen.js')

/** Options for {@link relayTransport}. */
export interface RelayTransportOptions {
  /** The relays `listen` streams from. @default the agent's relays (`components.relays`) */
  relays?: readonly string[]
  /** How `listen` receives: Server-Sent Events over `fetch`, or a WebSocket. @default 'sse' */
  mode?: StreamMode
  /**
   * The `fetch` for publishing, subscribing and acknowledging. On Node pass
   * `createNodeFetch({ ca })` from `@agentmsg/transport-https/node` (https only, address policy).
   * @default globalThis.fetch
   */
  fetch?: typeof fetch
  /** The `fetch` for SSE streams, without an overall timeout. @default `fetch` */
  streamFetch?: typeof fetch
  /** The WebSocket constructor for `mode: 'ws'`. @default the platform's (`ws` on Node) */
  WebSocket?: WebSocketConstructor
  /**
   * Requests other than streams (publish, subscribe, acknowledge) are answered and read within
   * this, in ms (PROFILE §4). @default 30_000
   */
  timeoutMs?: number
  /** Where stream and relay failures go. @default `components.onError` */
  onError?: (error: unknown) => void
  /** Reconnect backoff. @default full jitter, 500 ms base, 30 s cap */
  backoff?: BackoffOptions
  /** Uniform numbers in [0, 1) for the `any` failover start, for tests. @default Math.random */
  random?: () => number
}

/** The relay {@link Transport}: sends to `relay` targets and listens on the agent's relays. */
export interface RelayTransport extends Transport {
  readonly protocol: 'relay'
  readonly kinds: readonly ['relay']
  listen(receive: DeliveryHandler, options?: AbortOptions): Promise<void>
}

/** A {@link TransportFactory} for relays. */
export interface RelayTransportFactory extends TransportFactory {
  readonly protocol: 'relay'
  create(components: TransportComponents): RelayTransport
}

/**
 * Relays as a transport (protocol `relay`, target kind `relay`).
 *
 * - `send(message, {kind: 'relay', agent, urls, preference})` publishes with failover across
 *   `urls` (PROFILE §9: a network error, 5xx or 429 moves to the next relay, another 4xx
 *   stops) and resolves with the relay that took it as the receipt's `url`.
 * - `listen(receive)` opens the agent's mailbox on each relay once (the subscription id is
 *   kept in `components.storage` under `sub/<relay>`), streams it from the stored cursor
 *   (`cursor/<relay>`) and hands each entry to `receive` as `{ body: <message JSON>, transport:
 *   'relay' }`. Accepted, duplicate and permanently refused entries are acknowledged and the
 *   cursor stored; one refused for now stays and comes again after a reconnect. A relay that is
 *   down is reported through `onError` as a `RelayError` naming it (code `unavailable`) and
 *   retried with backoff; `listen` does not reject for it. A relay that refuses the mailbox (a
 *   4xx other than 429, e.g. `forbidden`) rejects `listen` with a `RelayError`.
 *
 * @example
 * const agent = await createAgent({ transports: [httpsTransport(), relayTransport({ mode: 'ws' })] })
 */
export function relayTransport(options: RelayTransportOptions = {}): RelayTransportFactory {
  return { protocol: 'relay', create: (components) => createRelayTransport(options, components) }
}

function createRelayTransport(
  options: RelayTransportOptions,
  components: TransportComponents,
): RelayTransport {
  const fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const report = (error: unknown) => {
    try {
      ;(options.onError ?? components.onError)(error)
    } catch {
      // a throwing reporter must not stop a stream
    }
  }
  const listeners: MailboxListener[] = []
  let listening = false
  let closed = false

  const stop = async () => {
    await Promise.all(listeners.splice(0).map((l) => l.close()))
  }

  return {
    protocol: 'relay',
    kinds: ['relay'],

    async send(
      message: Message,
      target: DeliveryTarget,
      sendOptions: TransportSendOptions = {},
    ): Promise<DeliveryReceipt> {
      if (closed) throw new TypeError('send: the relay transport is closed')
      if (target?.kind !== 'relay') {
        throw invalidFormat('the relay transport sends to relay targets', 'target.kind')
      }
      // No outbox here: `durable` is the https transport's; a relay that fails is failed over.
      const result = await publishWithFailover(message, target.urls, {
        fetch: fetchFn,
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(target.preference ? { preference: target.preference } : {}),
        ...(options.random ? { random: options.random } : {}),
        ...(sendOptions.signal ? { signal: sendOptions.signal } : {}),
      })
      return { messageId: result.messageId, target, url: result.relayUrl }
    },

    async listen(receive: DeliveryHandler, listenOptions: AbortOptions = {}): Promise<void> {
      listenOptions.signal?.throwIfAborted()
      if (closed) throw new TypeError('listen: the relay transport is closed')
      if (listening) throw new TypeError('listen: the relay transport is listening already')
      listening = true
      let loaded: Awaited<ReturnType<typeof loadListening>>
      try {
        loaded = await loadListening()
      } catch (error) {
        // A chunk that did not download: a later listen may try again.
        listening = false
        throw error
      }
      // Closed or aborted while loading: nothing was started, nothing to stop.
      if (closed) return
      listenOptions.signal?.throwIfAborted()
      const { MailboxListener, relayCore } = loaded
      const relays = [...new Set(options.relays ?? components.relays)]
      for (const relayUrl of relays) {
        let client
        try {
          client = relayCore({
            relayUrl,
            agent: components.agentId,
            signer: components.signer,
            fetch: fetchFn,
            ...(options.streamFetch ? { streamFetch: options.streamFetch } : {}),
            ...(options.WebSocket ? { WebSocket: options.WebSocket } : {}),
            ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          })
        } catch (error) {
          // A relay URL that is not one (PROFILE §9 base URL): the others still listen.
          report(relayError(relayUrl, error))
          continue
        }
        listeners.push(
          new MailboxListener({
            client,
            storage: components.storage,
            receive,
            mode: options.mode ?? 'sse',
            backoff: options.backoff ?? {},
            report,
          }),
        )
      }
      listenOptions.signal?.addEventListener('abort', () => void stop(), { once: true })
      try {
        await Promise.all(listeners.map((l) => l.start()))
      } catch (error) {
        // A relay refused the mailbox: stop the others too, so a failed listen leaves nothing.
        await stop()
        throw error
      }
    },

    async close(): Promise<void> {
      closed = true
      await stop()
    },
  }
}
