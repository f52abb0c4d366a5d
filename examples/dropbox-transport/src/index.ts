/**
 * A custom agentmsg transport written outside the SDK, against `@agentmsg/core` alone: each agent
 * runs an HTTPS "drop box" that takes signed messages by POST, and lists its URL in its identity
 * document as `endpoints.dropbox` (an extension member, kept by every validator, PROFILE §4).
 * A sender's `targets(peer)` finds it there. The target does not declare itself confidential,
 * so the agent seals the bodies it sends this way (PROFILE §8); the transport only moves bytes.
 */
import { lookup } from 'node:dns/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer, request, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import {
  type AbortOptions,
  AgentMsgError,
  type DeliveryHandler,
  type DeliveryReceipt,
  type DeliveryTarget,
  type IdentityDocument,
  type Message,
  type PeerRoute,
  PROFILE,
  type Transport,
  type TransportComponents,
  type TransportFactory,
} from '@agentmsg/core'
import { httpRequest, invalidFormat, readBody, readJson } from '@agentmsg/core/http'
import {
  type AddressPolicy,
  acceptedReply,
  createAddressPolicy,
  errorReply,
  type HttpReply,
  parseIp,
} from '@agentmsg/core/server'

/** The protocol, the kind of its targets and the `endpoints` member naming a drop box. */
export const DROPBOX = 'dropbox'

export interface DropBoxOptions {
  /** Serve this agent's drop box (needed to receive). */
  serve?: { tls: { cert: string; key: string }; port?: number; host?: string }
  /** A CA to trust besides the system's, for peers' drop boxes (a development CA). */
  ca?: string
  /** The outbound address rules (PROFILE §4). @default createAddressPolicy(): public unicast only */
  addressPolicy?: AddressPolicy
}

/** The transport of one agent: `url` is its drop box once it listens. */
export interface DropBoxTransport extends Transport {
  readonly url: string | undefined
}

/** `document` listing `url` as its drop box. */
export function withDropBox(document: IdentityDocument, url: string): IdentityDocument {
  return { ...document, endpoints: { ...document.endpoints, [DROPBOX]: url } }
}

/** The factory for `createAgent({ transports: [dropBoxTransport(options), …] })`. */
export function dropBoxTransport(options: DropBoxOptions = {}) {
  return {
    protocol: DROPBOX,
    create: (components: TransportComponents): DropBoxTransport => new DropBox(options, components),
  } satisfies TransportFactory
}

class DropBox implements DropBoxTransport {
  readonly protocol = DROPBOX
  url: string | undefined
  #server: Server | undefined
  #receive: DeliveryHandler | undefined
  #closed = false
  readonly #fetch: typeof fetch

  constructor(
    private readonly options: DropBoxOptions,
    private readonly components: TransportComponents,
  ) {
    this.#fetch = httpsFetch(options.ca, options.addressPolicy ?? createAddressPolicy())
  }

  targets(peer: PeerRoute): DeliveryTarget[] {
    const url = peer.document?.endpoints[DROPBOX]
    if (typeof url !== 'string' || !url.startsWith('https://')) return []
    return [{ kind: DROPBOX, agent: peer.agent, urls: [url], route: 'direct' }]
  }

  async send(message: Message, target: DeliveryTarget, options: AbortOptions = {}) {
    if (this.#closed) throw new AgentMsgError('unavailable', 'the drop box transport is closed')
    const url = target.urls[0]
    if (target.kind !== DROPBOX || url === undefined) {
      throw invalidFormat('not a drop box target', 'target.kind')
    }
    const init = {
      fetch: this.#fetch,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(message),
      signal: options.signal,
      what: `drop box ${url}`,
    }
    const answer = await httpRequest(url, init, (response, signal) => readJson(response, signal))
    const messageId = (answer as { message_id?: unknown } | null)?.message_id
    if (typeof messageId !== 'string')
      throw new AgentMsgError('unavailable', `${url}: no message_id`)
    return { messageId, target, url } satisfies DeliveryReceipt
  }

  async listen(receive: DeliveryHandler, options: AbortOptions = {}): Promise<void> {
    options.signal?.throwIfAborted()
    if (this.#closed) throw new AgentMsgError('unavailable', 'the drop box transport is closed')
    const serve = this.options.serve
    // Without `serve` the transport only sends: an agent that sends through it listens elsewhere.
    if (!serve) return
    this.#receive = receive
    const server = createServer(serve.tls, (req, res) => void this.#handle(req, res))
    this.#server = server
    const host = serve.host ?? '127.0.0.1'
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject).listen(serve.port ?? 0, host, () => resolve())
    })
    const { port } = server.address() as AddressInfo
    this.url = `https://${host.includes(':') ? `[${host}]` : host}:${port}/${DROPBOX}`
    options.signal?.addEventListener('abort', () => void this.close(), { once: true })
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#receive = undefined
    const server = this.#server
    this.#server = undefined
    if (!server) return
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let reply: HttpReply
    try {
      reply = await this.#answer(req)
    } catch (error) {
      this.components.onError(error)
      reply = errorReply('internal_error', 'the drop box failed')
    }
    res.writeHead(reply.status, reply.headers).end(reply.body ?? undefined)
  }

  /** One POST: the body goes to the agent's receive pipeline, its outcome back as HTTP. */
  async #answer(req: IncomingMessage): Promise<HttpReply> {
    if (req.method !== 'POST') return errorReply('method_not_allowed', 'POST a message')
    const stream = Readable.toWeb(req) as ReadableStream<Uint8Array>
    const options = { maxBytes: PROFILE.maxBodyBytes, timeoutMs: PROFILE.bodyTimeoutMs }
    const body = await readBody(stream, { ...options, failure: 'invalid_format' })
    if (body === undefined) return errorReply('payload_too_large', 'the message is too large')
    const receive = this.#receive
    if (!receive) return errorReply('unavailable', 'the drop box is closed')
    const outcome = await receive({ body, transport: DROPBOX })
    if (outcome.status !== 'refused') return acceptedReply(outcome.messageId)
    const { code, message, retryAfter } = outcome.error
    return errorReply(code, message, { retryAfter })
  }
}

/**
 * `fetch` over `node:https` with an extra CA, connecting only to addresses `policy` allows
 * (PROFILE §4): a host name is resolved first and the checked address is the one dialled.
 */
function httpsFetch(ca: string | undefined, policy: AddressPolicy): typeof fetch {
  return async (input, init = {}) => {
    const url = new URL(String(input))
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    const literal = parseIp(host) !== undefined
    const address = literal ? host : (await lookup(host)).address
    policy.assertAddress(address, literal ? undefined : host)
    return new Promise<Response>((resolve, reject) => {
      const options = {
        method: init.method ?? 'GET',
        headers: { ...(init.headers as Record<string, string>), host: url.host },
        ...(ca !== undefined && { ca }),
        ...(!literal && { servername: host }),
        signal: init.signal ?? undefined,
      }
      const target = new URL(url)
      target.hostname = address.includes(':') ? `[${address}]` : address
      const req = request(target, options, (res) => {
        const status = res.statusCode ?? 500
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          for (const v of [value ?? []].flat()) headers.append(name, v)
        }
        const empty = status === 204 || status === 304
        const body = empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>)
        resolve(new Response(body, { status, headers }))
      })
      req.once('error', reject)
      req.end(init.body as string | undefined)
    })
  }
}
