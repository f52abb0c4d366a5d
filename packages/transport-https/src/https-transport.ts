/**
 * Direct HTTPS delivery as a core `Transport` (SPEC §4.1, PROFILE §6): `send` posts to the
 * recipient's inbox through the durable outbox kept in the agent's transport storage.
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
  TransportSendOptions,
} from '@agentmsg/core'
import { type Clock, systemClock } from './clock.js'
import { createInboxHandler } from './inbox/handler.js'
import type { InboxHandler, InboxLimits } from './inbox/types.js'
import type { OutboxEntry } from './outbox.js'
import { Sender } from './sender.js'

/** Options for {@link httpsTransport}. */
export interface HttpsTransportOptions {
  /**
   * The fetch that makes each attempt. `@agentmsg/transport-https/node`'s `httpsTransport`
   * defaults to `createNodeFetch()` (https only, PROFILE §4 address rules, a timeout).
   * @default globalThis.fetch
   */
  fetch?: typeof fetch
  /** Timeout of one attempt. @default 30_000 */
  attemptTimeoutMs?: number
  /** The retry schedule's time source. @default the agent's `now()` with the real timers */
  clock?: Clock
  /** Jitter source in [0, 1), for tests. @default Math.random */
  random?: () => number
  /** Retries stop this long after the first attempt. @default 86_400_000 (24 h, PROFILE §6) */
  deadlineMs?: number
  /**
   * Serve the agent's inbox from your runtime's own HTTPS server (`Deno.serve`, `Bun.serve`, a
   * Worker's `fetch`, any server that speaks `Request`/`Response`): once the agent listens,
   * `mount` gets the web-standard inbox handler to route requests to; on close, `undefined`.
   */
  webInbox?: WebInboxOptions
}

/** The inbox {@link HttpsTransportOptions.webInbox} serves. */
export interface WebInboxOptions {
  /** Route requests to `handler.fetch(request, { clientAddress })` while it is set. */
  mount(handler: InboxHandler | undefined): void
  /** Path of the agent's base URL (`/agents/bob` for `https://host/agents/bob`). @default '' */
  basePath?: string
  /** The inbox's HTTP limits (per address, concurrent reads; per sender in capabilities). */
  limits?: InboxLimits
  /** Reverse proxies whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[]
}

/** The https {@link Transport}: sends to `inbox` targets (and with `webInbox`, receives). */
export interface HttpsTransport extends Transport {
  readonly protocol: 'https'
  readonly kinds: readonly ['inbox']
  /** Deliveries waiting in the outbox. */
  pending(): Promise<OutboxEntry[]>
}

/** A {@link TransportFactory} for direct HTTPS delivery. */
export interface HttpsTransportFactory extends TransportFactory {
  readonly protocol: 'https'
  create(components: TransportComponents): HttpsTransport | Promise<HttpsTransport>
}

/**
 * Direct HTTPS delivery (protocol `https`, target kind `inbox`).
 *
 * `send(message, {kind: 'inbox', agent, urls: [inboxUrl]}, {durable, signal})` stores the
 * delivery, then makes the first attempt:
 * - 202 → resolves with the receipt; a 4xx other than 429 → rejects with a `DeliveryError`
 *   (never retried).
 * - A network error, 5xx or 429 (PROFILE §6 retries): with `durable`, resolves
 *   `{pending: true}` and keeps retrying for 24 h, reporting the end through
 *   `components.onOutcome`; without, removes the delivery from the outbox and rejects with a
 *   `DeliveryError` whose status is retryable (429 or 5xx), so the caller can try a relay.
 *
 * Deliveries left in the outbox by an earlier run resume when the transport is created; their
 * outcomes go to `components.onOutcome`.
 *
 * @example
 * const agent = await createAgent({ transports: [httpsTransport(), relayTransport()] })
 */
export function httpsTransport(options: HttpsTransportOptions = {}): HttpsTransportFactory {
  return {
    protocol: 'https',
    create: (components) => createHttpsTransport(options, components),
  }
}

/** The transport over a sender on `components.storage`; shared by the Node entry. */
export function createHttpsTransport(
  options: HttpsTransportOptions,
  components: TransportComponents,
): HttpsTransport {
  const clock: Clock = options.clock ?? { ...systemClock, now: () => components.now() }
  const sender = new Sender(
    {
      storage: components.storage,
      clock,
      resume: false,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.attemptTimeoutMs !== undefined
        ? { attemptTimeoutMs: options.attemptTimeoutMs }
        : {}),
      ...(options.random ? { random: options.random } : {}),
      ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
    },
    { onLaterOutcome: (event) => components.onOutcome?.(event) },
  )
  sender.on('error', (e) => components.onError(e.error))
  // Listeners first, then the deliveries of an earlier run (PROFILE §6: they survive a restart).
  sender.resume().catch((error: unknown) => components.onError(error))

  const send = async (
    message: Message,
    target: DeliveryTarget,
    sendOptions: TransportSendOptions = {},
  ): Promise<DeliveryReceipt> => {
    const { signal, durable = false } = sendOptions
    signal?.throwIfAborted()
    const delivery = await sender.enqueue(message, target)
    const onAbort = () => void delivery.cancel(signal?.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    if (signal?.aborted) onAbort() // aborted while the delivery was being stored
    let first
    try {
      first = await delivery.first
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
    if (first.kind === 'settled') return delivery.done
    if (durable) {
      // A send of the same message that was not durable cancelled it meanwhile: queue anew.
      if (!delivery.detach()) return send(message, target, sendOptions)
      const { messageId, target: stored } = first.error
      return { messageId, target: stored, url: stored.urls[0]!, pending: true }
    }
    // Not durable: the caller goes elsewhere (a relay) or gives up; nothing stays queued.
    await delivery.cancel(first.error)
    throw first.error
  }

  const transport: HttpsTransport = {
    protocol: 'https',
    kinds: ['inbox'],
    send,
    pending: () => sender.pending(),
    close: () => sender.close(),
  }
  if (options.webInbox) mountWebInbox(transport, options.webInbox, components)
  return transport
}

/**
 * An agent's inbox handler: its id and current identity document, every message handed to its
 * receive pipeline (`receive`), sealed bodies advertised as the agent opens them. Shared with the
 * Node transport's `inbox`.
 */
export function agentInboxHandler(
  components: TransportComponents,
  receive: DeliveryHandler,
  inbox: Pick<WebInboxOptions, 'basePath' | 'limits' | 'trustedProxies'>,
): InboxHandler {
  return createInboxHandler({
    agentId: components.agentId,
    identityDocument: () => components.identityDocument(),
    receive,
    encryption: components.encryption ?? [],
    onError: (error) => components.onError(error),
    ...(inbox.basePath ? { basePath: inbox.basePath } : {}),
    ...(inbox.limits ? { limits: inbox.limits } : {}),
    ...(inbox.trustedProxies ? { trustedProxies: inbox.trustedProxies } : {}),
    now: () => components.now(),
  })
}

/**
 * `listen(receive)` of a transport with `webInbox`: the inbox handler hands every message to the
 * agent's receive pipeline (PROFILE §6), and the application's server routes requests to it.
 */
function mountWebInbox(
  transport: HttpsTransport,
  inbox: WebInboxOptions,
  components: TransportComponents,
): void {
  let handler: InboxHandler | undefined
  let closed = false
  transport.listen = async (receive: DeliveryHandler, listenOptions: AbortOptions = {}) => {
    listenOptions.signal?.throwIfAborted()
    if (closed) throw new TypeError('listen: the transport is closed')
    if (handler) throw new TypeError('listen: the inbox is already served')
    handler = agentInboxHandler(components, receive, inbox)
    inbox.mount(handler)
    listenOptions.signal?.addEventListener('abort', () => unmount(), { once: true })
  }
  const unmount = async () => {
    const served = handler
    if (!served) return
    inbox.mount(undefined)
    await served.close()
  }
  const closeSending = transport.close
  transport.close = async () => {
    closed = true
    await unmount()
    await closeSending()
  }
}
