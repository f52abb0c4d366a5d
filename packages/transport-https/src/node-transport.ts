/**
 * The https transport on Node: sends through `createNodeFetch` (https only, PROFILE §4 address
 * rules, a timeout per attempt) and, with `inbox`, serves the agent's inbox (PROFILE §6): its
 * `listen(receive)` hands every message posted to the inbox to the agent's receive pipeline.
 */
import type {
  AbortOptions,
  DeliveryHandler,
  TransportComponents,
  TransportFactory,
} from '@agentmsg/core'
import type { AddressPolicy } from './address-policy.js'
import {
  agentInboxHandler,
  createHttpsTransport,
  type HttpsTransport,
  type HttpsTransportOptions,
} from './https-transport.js'
import type { InboxLimits } from './inbox/types.js'
import { createNodeFetch, type NodeFetchOptions } from './node-fetch.js'
import { type InboxServer, serveInbox } from './node-server.js'

/** The inbox a Node https transport serves. */
export interface HttpsInboxOptions {
  /** Port to listen on; for a URL agent, the one its id names. @default 0 (a free one) */
  port?: number
  /** @default '127.0.0.1' */
  host?: string
  /** Certificate and key, PEM (https only, also in development: `createDevCertificate()`). */
  tls: { cert: string | Buffer; key: string | Buffer }
  /** Path of the agent's base URL (`/agents/bob` for `https://host/agents/bob`). @default '' */
  basePath?: string
  /** The inbox's HTTP limits (per address, concurrent reads; per sender in capabilities). */
  limits?: InboxLimits
  /** Reverse proxies whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[]
  /** On close, connections still open after this many ms are cut. @default 10_000 */
  closeTimeoutMs?: number
}

/** Options for the Node {@link httpsTransport}. */
export interface NodeHttpsTransportOptions extends HttpsTransportOptions {
  /** Extra trusted CA (e.g. the development CA, `devCert.ca`) for the default fetch. */
  ca?: NodeFetchOptions['ca']
  /** Addresses the default fetch may connect to. @default public unicast only (PROFILE §4) */
  addressPolicy?: AddressPolicy
  /** Serve the agent's inbox: `listen` starts the HTTPS server. */
  inbox?: HttpsInboxOptions
}

/** The Node https transport; `listen` serves the inbox when one was configured. */
export interface NodeHttpsTransport extends HttpsTransport {
  /** The inbox server's base URL (`https://127.0.0.1:8443`) once listening, else `undefined`. */
  readonly url: string | undefined
  /** The port the inbox listens on, once listening. */
  readonly port: number | undefined
}

/** A {@link TransportFactory} for the Node https transport. */
export interface NodeHttpsTransportFactory extends TransportFactory {
  readonly protocol: 'https'
  create(components: TransportComponents): NodeHttpsTransport
}

/**
 * Direct HTTPS delivery on Node, optionally serving the agent's inbox. Sending is as the
 * isomorphic `httpsTransport`, with `createNodeFetch({ ca, addressPolicy, timeoutMs })` as the
 * default fetch. With `inbox`, `listen(receive)` serves `POST …/.well-known/agentmsg/inbox`
 * (and the identity and capabilities documents) and hands each message to `receive`; `close()`
 * stops the server.
 *
 * @example
 * const https = httpsTransport({ inbox: { port: 8443, tls: devCert } })
 * const agent = await createNodeAgent({ transports: [https, relayTransport()] })
 */
export function httpsTransport(options: NodeHttpsTransportOptions = {}): NodeHttpsTransportFactory {
  return {
    protocol: 'https',
    create: (components) => createNodeHttpsTransport(options, components),
  }
}

function createNodeHttpsTransport(
  options: NodeHttpsTransportOptions,
  components: TransportComponents,
): NodeHttpsTransport {
  const { ca, addressPolicy, inbox, ...rest } = options
  if (inbox && rest.webInbox) throw new TypeError('give inbox (node:https) or webInbox, not both')
  const fetch =
    rest.fetch ??
    createNodeFetch({
      ...(ca !== undefined ? { ca } : {}),
      ...(addressPolicy ? { addressPolicy } : {}),
      timeoutMs: rest.attemptTimeoutMs ?? 30_000,
    })
  const sending = createHttpsTransport({ ...rest, fetch }, components)
  let server: InboxServer | undefined
  let listening: Promise<void> | undefined
  let closed = false

  const serve = async (
    inbox: HttpsInboxOptions,
    receive: DeliveryHandler,
    signal?: AbortSignal,
  ): Promise<void> => {
    const handler = agentInboxHandler(components, receive, inbox)
    const served = await serveInbox(handler, {
      port: inbox.port ?? 0,
      host: inbox.host ?? '127.0.0.1',
      tls: inbox.tls,
      onError: (error) => components.onError(error),
      ...(inbox.closeTimeoutMs !== undefined ? { closeTimeoutMs: inbox.closeTimeoutMs } : {}),
    })
    server = served
    if (closed) return void (await served.close())
    signal?.addEventListener('abort', () => void served.close().catch(components.onError), {
      once: true,
    })
  }

  const transport: NodeHttpsTransport = {
    protocol: 'https',
    kinds: ['inbox'],
    get url() {
      return server?.url
    },
    get port() {
      return server?.port
    },
    send: (message, target, sendOptions) => sending.send(message, target, sendOptions),
    pending: () => sending.pending(),
    // With `webInbox` instead of `inbox`, the isomorphic transport serves it.
    ...(sending.listen ? { listen: sending.listen } : {}),
    async close(): Promise<void> {
      closed = true
      await listening?.catch(() => {})
      await server?.close()
      await sending.close()
    },
  }
  // Only a transport that serves an inbox receives: the agent calls `listen` where it exists.
  if (inbox) {
    transport.listen = (receive: DeliveryHandler, listenOptions: AbortOptions = {}) => {
      listenOptions.signal?.throwIfAborted()
      if (closed) return Promise.reject(new TypeError('listen: the transport is closed'))
      if (listening) return Promise.reject(new TypeError('listen: the inbox is already served'))
      listening = serve(inbox, receive, listenOptions.signal)
      return listening
    }
  }
  return transport
}
