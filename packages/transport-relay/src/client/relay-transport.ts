/** The relay as a core `Transport` (PROFILE §9), and a worked example of the contract. */
import type {
  AbortOptions,
  DeliveryHandler,
  DeliveryReceipt,
  DeliveryTarget,
  Message,
  PeerRoute,
  Transport,
  TransportComponents,
} from '@agentmsg/core'
import { type Backoff, invalidFormat } from '@agentmsg/core/http'
import type { MailboxListener } from './mailbox-listener.js'
import { publishToRelay } from './publish.js'
import type { RelayClientOptions } from './relay-core.js'
import { relayError } from './relay-error.js'
import type { StreamMode } from './stream-types.js'

/** Imported by the first `listen`: sending needs none of it, and a browser agent sends first. */
const loadListening = () => import('./listen.js')

/** Options of {@link relayTransport}: `fetch`, `streamFetch`, `WebSocket`, `timeoutMs` as the client's. */
export interface RelayTransportOptions
  extends Pick<RelayClientOptions, 'fetch' | 'streamFetch' | 'WebSocket' | 'timeoutMs'> {
  /** The relays `listen` streams from. @default the agent's (`components.relays`) */
  relays?: readonly string[]
  /** How `listen` receives: Server-Sent Events over `fetch`, or a WebSocket. @default 'sse' */
  mode?: StreamMode
  /** Where stream and relay failures go. @default `components.onError` */
  onError?: (error: unknown) => void
  /** Reconnect backoff (full jitter). @default 500 ms base, 30 s cap */
  backoff?: ConstructorParameters<typeof Backoff>[0]
  /** Uniform numbers in [0, 1) for the `any` failover start, for tests. @default Math.random */
  random?: () => number
}

/** The relay {@link Transport}: relay targets for peers, and listening on the agent's relays. */
export interface RelayTransport extends Transport {
  /** Always `relay`. */
  readonly protocol: 'relay'
  targets(peer: PeerRoute): DeliveryTarget[]
  listen(receive: DeliveryHandler, options?: AbortOptions): Promise<void>
  subscribe(topic: string, options?: AbortOptions & { webhook?: string }): Promise<void>
  unsubscribe(topic: string, options?: AbortOptions): Promise<void>
}

/**
 * Relays as a transport: `targets(peer)` gives the peer's relays, then its document's, in its
 * `relay.preference` (`any` when it names none, `ordered` without a document), `confidential`
 * when the agent trusts each; `send` publishes with failover ({@link publishToRelay});
 * `listen` streams each of the agent's relays into `receive`, reporting one that is down to
 * `onError` as a `RelayError` and retrying it; a relay's refusal rejects.
 *
 * @example
 * const agent = await createAgent({ transports: [httpsTransport(), relayTransport({ mode: 'ws' })] })
 */
export function relayTransport(options: RelayTransportOptions = {}): {
  /** Always `relay`. */
  readonly protocol: 'relay'
  /** The transport for one agent. */
  create(components: TransportComponents): RelayTransport
} {
  return { protocol: 'relay', create: (components) => createRelayTransport(options, components) }
}

function createRelayTransport(
  options: RelayTransportOptions,
  components: TransportComponents,
): RelayTransport {
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

    targets(peer: PeerRoute): DeliveryTarget[] {
      const doc = peer.document
      const urls = [...new Set([...peer.relays, ...(doc?.relay?.urls ?? [])])]
      if (urls.length === 0) return []
      return [
        {
          kind: 'relay',
          agent: peer.agent,
          urls,
          route: 'relay',
          preference: doc ? (doc.relay?.preference ?? 'any') : 'ordered',
          confidential: urls.every((url) => components.trusts(url)),
          // A relay that failed for now is tried again from the agent's outbox (PROFILE §6).
          durable: true,
        },
      ]
    },

    async send(message: Message, target: DeliveryTarget, sendOptions: AbortOptions = {}) {
      if (closed) throw new TypeError('send: the relay transport is closed')
      if (target?.kind !== 'relay') {
        throw invalidFormat('the relay transport sends to relay targets', 'target.kind')
      }
      const result = await publishToRelay(message, target.urls, {
        fetch: options.fetch,
        timeoutMs: options.timeoutMs,
        preference: target.preference,
        random: options.random,
        signal: sendOptions.signal,
      })
      return { messageId: result.messageId, target, url: result.relayUrl } satisfies DeliveryReceipt
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
      for (const relayUrl of new Set(options.relays ?? components.relays)) {
        try {
          listeners.push(new loaded.MailboxListener(relayUrl, options, components, receive, report))
        } catch (error) {
          // Not a relay URL (PROFILE §9 base URL): the others still listen.
          report(relayError(relayUrl, error))
        }
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

    async subscribe(topic: string, o: AbortOptions & { webhook?: string } = {}): Promise<void> {
      const { subscribeTopic } = await import('./topics.js')
      const relays = options.relays ?? components.relays
      await subscribeTopic(relays, topic, options, components, report, o)
    },

    async unsubscribe(topic: string, o: AbortOptions = {}): Promise<void> {
      const { unsubscribeTopic } = await import('./topics.js')
      await unsubscribeTopic(
        options.relays ?? components.relays,
        topic,
        options,
        components,
        o.signal,
      )
    },

    async close(): Promise<void> {
      closed = true
      await stop()
    },
  }
}
