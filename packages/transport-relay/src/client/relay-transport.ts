/**
 * The relay as a core {@link Transport}: `send` publishes to the target relay, `listen` streams
 * the agent's mailbox. It is also the worked example of the Transport contract for anyone
 * writing their own transport.
 */
import {
  invalidFormat,
  type AbortOptions,
  type DeliveryReceipt,
  type DeliveryTarget,
  type InboundDelivery,
  type Message,
  type Transport,
} from '@agentmsg/core'
import type { RelayClient } from './relay-client.js'
import { publishToRelay } from './publish.js'
import type { StreamHandle, StreamOptions } from './stream.js'

/** Options for {@link relayTransport}. */
export interface RelayTransportOptions {
  /** The client of the agent's own relay: needed by `listen`, and its `fetch` serves `send`. */
  client?: RelayClient
  /** The `fetch` for `send` when there is no `client`. @default globalThis.fetch */
  fetch?: typeof fetch
  /** How `listen` streams (mode, backoff, `onRejected`, `onError`, …). @default SSE */
  stream?: Omit<StreamOptions, 'signal'>
}

/** A relay {@link Transport}; `listen` is always there (it needs the `client` option). */
export interface RelayTransport extends Transport {
  readonly protocol: 'relay'
  listen(
    handler: (delivery: InboundDelivery) => Promise<void>,
    options?: AbortOptions,
  ): Promise<void>
}

/**
 * A {@link Transport} over relays (protocol `relay`).
 *
 * - `send(message, { kind: 'relay', relayUrl })` publishes to that relay and resolves on 202.
 *   (For failover across a recipient's relays use `publishWithFailover`.)
 * - `listen(handler)` starts streaming the client's mailbox and resolves once started; every
 *   message is verified before the handler sees it, and acknowledged after its promise
 *   resolved. It runs until `close()` or the signal aborts.
 *
 * Writing your own transport: implement `protocol`, `send` (resolve only when the peer accepted),
 * optionally `listen` (call the handler one message at a time; acknowledge only after its
 * promise resolved) and `close`.
 *
 * @example
 * const client = createRelayClient({ relayUrl, agent, signer, resolver })
 * const transport = relayTransport({ client })
 * await transport.listen(async (delivery) => { await pipeline.receive(delivery.message) })
 * await transport.send(signed, { kind: 'relay', relayUrl: 'https://relay.example' })
 * await transport.close()
 */
export function relayTransport(options: RelayTransportOptions = {}): RelayTransport {
  const { client } = options
  const streams = new Set<StreamHandle>()
  let closed = false

  return {
    protocol: 'relay',

    async send(
      message: Message,
      target: DeliveryTarget,
      opts: AbortOptions = {},
    ): Promise<DeliveryReceipt> {
      if (target.kind !== 'relay')
        throw invalidFormat('the relay transport sends to relay targets', 'target.kind')
      const signal = opts.signal ? { signal: opts.signal } : {}
      const { messageId } = client
        ? await client.publish(message, { relayUrl: target.relayUrl, ...signal })
        : await publishToRelay(message, target.relayUrl, {
            ...(options.fetch ? { fetch: options.fetch } : {}),
            ...signal,
          })
      return { messageId, target }
    },

    async listen(
      handler: (delivery: InboundDelivery) => Promise<void>,
      opts: AbortOptions = {},
    ): Promise<void> {
      if (!client) throw invalidFormat('listen needs a relay client', 'client')
      if (closed) throw invalidFormat('the transport is closed', 'transport')
      const handle = client.stream(
        (d) =>
          handler({ message: d.message, transport: 'relay', cursor: d.cursor, ack: () => d.ack() }),
        { ...options.stream, ...(opts.signal ? { signal: opts.signal } : {}) },
      )
      streams.add(handle)
      void handle.done.catch(() => {}).finally(() => streams.delete(handle))
    },

    async close(): Promise<void> {
      closed = true
      await Promise.all([...streams].map((s) => s.close()))
    },
  }
}
