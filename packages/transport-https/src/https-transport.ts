/**
 * Direct HTTPS delivery as a core `Transport` (SPEC §4.1, PROFILE §6): a URL agent's inbox is a
 * target, and `send` is one POST to it. Retrying is the agent outbox's (PROFILE §6 retries).
 */
import {
  type AbortOptions,
  AgentMsgError,
  agentEndpoints,
  type DeliveryHandler,
  type DeliveryReceipt,
  type DeliveryTarget,
  type Message,
  type PeerRoute,
  PROFILE,
  parseAgentId,
  type Transport,
  type TransportComponents,
  type TransportFactory,
} from '@agentmsg/core'
import { httpRequest } from '@agentmsg/core/http'
import { createInboxHandler } from './inbox/handler.js'
import type { InboxHandler, InboxLimits } from './inbox/types.js'

/** Options for {@link httpsTransport}. */
export interface HttpsTransportOptions {
  /**
   * The fetch that makes each request. `@agentmsg/transport-https/node`'s `httpsTransport`
   * defaults to `createNodeFetch()` (https only, PROFILE §4 address rules).
   * @default globalThis.fetch
   */
  fetch?: typeof fetch
  /** Timeout of one delivery attempt. @default PROFILE.attemptTimeoutMs (30 s) */
  attemptTimeoutMs?: number
  /**
   * Serve the agent's inbox from your runtime's own HTTPS server (`Deno.serve`, `Bun.serve`, a
   * Worker's `fetch`, any server that speaks `Request`/`Response`): once the agent listens,
   * `mount` gets the web-standard inbox handler to route requests to; on close, `undefined`.
   */
  webInbox?: WebInboxOptions
}

/** What an agent's inbox is served with: its path and HTTP limits. */
export interface InboxServing {
  /** Path of the agent's base URL (`/agents/bob` for `https://host/agents/bob`). @default '' */
  basePath?: string
  /** The inbox's HTTP limits (per address, concurrent reads; per sender in capabilities). */
  limits?: InboxLimits
  /** Reverse proxies whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[]
}

/** The inbox {@link HttpsTransportOptions.webInbox} serves. */
export interface WebInboxOptions extends InboxServing {
  /** Route requests to `handler.fetch(request, { clientAddress })` while it is set. */
  mount(handler: InboxHandler | undefined): void
}

/**
 * Direct HTTPS delivery (protocol `https`). `targets(peer)` gives a URL agent's inbox (or
 * `peer.inbox`): route `direct`, `confidential` (TLS to the peer itself), `durable` (the agent's
 * outbox retries it). `send(message, target, { signal })` makes one POST: 202 resolves with the
 * receipt; anything else rejects with the peer's `AgentMsgError` (`peerStatus`, `peerCode`,
 * `retryAfter`; `shouldRetry()` for 429 and 5xx), a network failure with `unavailable`, an
 * address the fetch refused with `forbidden` and no `peerStatus`.
 *
 * @example
 * const agent = await createAgent({ transports: [httpsTransport(), relayTransport()] })
 */
export function httpsTransport(options: HttpsTransportOptions = {}): TransportFactory {
  return { protocol: 'https', create: (components) => createHttpsTransport(options, components) }
}

/** The transport; shared by the Node entry, which adds its inbox server. */
export function createHttpsTransport(
  options: HttpsTransportOptions,
  components: TransportComponents,
): Transport {
  let closed = false
  const transport: Transport = {
    protocol: 'https',
    targets: inboxTargets,
    send: async (message, target, sendOptions) => {
      if (closed) throw new TypeError('send: the transport is closed')
      return post(message, target, options, sendOptions)
    },
    close: async () => {
      closed = true
    },
  }
  const web = options.webInbox
  if (!web) return transport
  return serveInbox(transport, components, web, async (handler) => {
    web.mount(handler)
    return async () => {
      web.mount(undefined)
      await handler.close()
    }
  })
}

function inboxTargets({ agent, inbox, document }: PeerRoute): DeliveryTarget[] {
  try {
    if (inbox === undefined && parseAgentId(agent).kind !== 'url') return []
  } catch {
    return []
  }
  const urls = [inbox ?? document?.endpoints.inbox ?? agentEndpoints(agent).inbox]
  return [{ kind: 'inbox', agent, urls, route: 'direct', confidential: true, durable: true }]
}

async function post(
  message: Message,
  target: DeliveryTarget,
  options: HttpsTransportOptions,
  { signal }: AbortOptions = {},
): Promise<DeliveryReceipt> {
  const url = inboxUrl(target)
  // The agent checked `JCS(message without trace)` once; the body cap holds for the trace too.
  const body = new TextEncoder().encode(JSON.stringify(message))
  if (body.byteLength > PROFILE.maxBodyBytes) {
    throw new AgentMsgError(
      'payload_too_large',
      `message ${message.message_id} is ${body.byteLength} bytes; an inbox takes at most ${PROFILE.maxBodyBytes} (PROFILE §6)`,
    )
  }
  await httpRequest(
    url,
    {
      fetch: options.fetch,
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        accept: 'application/json',
        'idempotency-key': message.message_id,
      },
      body,
      timeoutMs: options.attemptTimeoutMs ?? PROFILE.attemptTimeoutMs,
      signal,
      what: `delivery of ${message.message_id} to ${url}`,
    },
    // The 2xx body is not needed: the message id is ours.
    async (response) => void response.body?.cancel().catch(() => {}),
  )
  return { messageId: message.message_id, target, url }
}

/** The inbox URL of a target: its one `https:` URL, also in development (PROFILE §6 TLS). */
function inboxUrl(target: DeliveryTarget): string {
  const fail = (why: string, field = 'target.urls') =>
    new AgentMsgError('invalid_format', why, { field })
  if (target.kind !== 'inbox') {
    throw fail(`the https transport delivers to inbox targets, not ${target.kind}`, 'target.kind')
  }
  const [text, ...more] = target.urls
  if (text === undefined || more.length > 0) throw fail('an inbox target has exactly one URL')
  if (!URL.canParse(text)) throw fail(`inbox URL ${JSON.stringify(text)} is not a URL`)
  const url = new URL(text)
  if (url.protocol !== 'https:') {
    throw fail(
      `inbox URL ${text} is ${url.protocol}, but only https: is used, also in development: ` +
        'use a development certificate and trust it as a custom CA (PROFILE §6)',
    )
  }
  if (url.username || url.password) throw fail('inbox URLs must not carry credentials')
  return text
}

/**
 * `listen(receive)` serving the agent's inbox: `start` gets its handler (its id and current
 * identity document, messages handed to `receive`, sealed bodies advertised as the agent opens
 * them) and answers how to stop serving, which an abort or `close()` does.
 */
export function serveInbox<T extends Transport>(
  sending: T,
  components: TransportComponents,
  inbox: InboxServing,
  start: (handler: InboxHandler) => Promise<() => Promise<void>>,
): T {
  let started: Promise<() => Promise<void>> | undefined
  let closed = false
  const closeSending = sending.close
  return Object.assign(sending, {
    listen(receive: DeliveryHandler, { signal }: AbortOptions = {}) {
      signal?.throwIfAborted()
      if (closed) return Promise.reject(new TypeError('listen: the transport is closed'))
      if (started) return Promise.reject(new TypeError('listen: the inbox is already served'))
      const handler = createInboxHandler({
        basePath: inbox.basePath,
        limits: inbox.limits,
        trustedProxies: inbox.trustedProxies,
        agentId: components.agentId,
        identityDocument: () => components.identityDocument(),
        receive,
        encryption: components.encryption ?? [],
        onError: (error) => components.onError(error),
        now: () => components.now(),
      })
      started = start(handler)
      return started.then((stop) => {
        signal?.addEventListener('abort', () => void stop().catch(components.onError))
      })
    },
    async close() {
      closed = true
      const stop = await started?.catch(() => undefined)
      await stop?.()
      await closeSending()
    },
  })
}
