/**
 * The https transport on Node: sends through `createNodeFetch` (https only, PROFILE §4 address
 * rules) and, with `inbox`, serves the agent's inbox (PROFILE §6): its `listen(receive)` hands
 * every message posted to the inbox to the agent's receive pipeline.
 */
import type { Transport, TransportComponents, TransportFactory } from '@agentmsg/core'
import type { AddressPolicy } from '@agentmsg/core/server'
import {
  type HttpsTransportOptions as BaseOptions,
  createHttpsTransport,
  type InboxServing,
  serveInbox,
} from './https-transport.js'
import { createNodeFetch, type NodeFetchOptions } from './node-fetch.js'
import { type HttpsServer, type ServeHttpsOptions, serveHttps } from './node-server.js'

/** Options for the Node {@link httpsTransport}. */
export interface HttpsTransportOptions extends BaseOptions {
  /** Extra trusted CA (e.g. the development CA, `devCert.ca`) for the default fetch. */
  ca?: NodeFetchOptions['ca']
  /** Addresses the default fetch may connect to. @default public unicast only (PROFILE §4) */
  addressPolicy?: AddressPolicy
  /**
   * Serve the agent's inbox on `node:https`: `listen` starts the server (`port` 0: a free one;
   * for a URL agent, the one its id names), `close` stops it. `tls` is required (https also in
   * development: `createDevCertificate()` from `@agentmsg/dev-tls`).
   */
  inbox?: InboxServing &
    Pick<ServeHttpsOptions, 'port' | 'host' | 'closeTimeoutMs'> &
    Required<Pick<ServeHttpsOptions, 'tls'>>
}

/** The Node https transport; `url` and `port` are its inbox server's, once listening. */
interface NodeHttpsTransport extends Transport {
  readonly url: string | undefined
  readonly port: number | undefined
}

interface NodeHttpsTransportFactory extends TransportFactory {
  create(components: TransportComponents): NodeHttpsTransport
}

/**
 * Direct HTTPS delivery on Node, optionally serving the agent's inbox. Sending is as the
 * isomorphic `httpsTransport`, with `createNodeFetch({ ca, addressPolicy })` as the default
 * fetch. With `inbox`, `listen(receive)` serves `POST …/.well-known/agentmsg/inbox` (and the
 * identity and capabilities documents) and hands each message to `receive`; the transport's
 * `url` is then the server's base URL.
 *
 * @example
 * const https = httpsTransport({ inbox: { port: 8443, tls: devCert } })
 * const agent = await createNodeAgent({ transports: [https, relayTransport()] })
 */
export function httpsTransport(options: HttpsTransportOptions = {}): NodeHttpsTransportFactory {
  return {
    protocol: 'https',
    create(components) {
      const { ca, addressPolicy, inbox, ...rest } = options
      if (inbox && rest.webInbox)
        throw new TypeError('give inbox (node:https) or webInbox, not both')
      const fetch = rest.fetch ?? createNodeFetch({ ca, addressPolicy })
      const sending = createHttpsTransport({ ...rest, fetch }, components)
      if (!inbox) return { ...sending, url: undefined, port: undefined }
      let server: HttpsServer | undefined
      const transport = {
        ...sending,
        get url() {
          return server?.url
        },
        get port() {
          return server?.port
        },
      }
      return serveInbox(transport, components, inbox, async (handler) => {
        const running = await serveHttps(handler, { ...inbox, onError: components.onError })
        server = running
        return () => running.close()
      })
    },
  }
}
