/** A `fetch` over `node:https` that applies PROFILE §4 and §6 to every request. */
import type { IncomingMessage } from 'node:http'
import https from 'node:https'
import type net from 'node:net'
import tls from 'node:tls'
import { PROFILE } from '@agentmsg/core'
import { type AddressPolicy, AddressRefusedError, createAddressPolicy } from '@agentmsg/core/server'
import { PolicyAgent, refusedLiteral } from './node-policy-agent.js'

/** Options for {@link createNodeFetch}. */
export interface NodeFetchOptions {
  /** Extra trusted CA certificates (PEM, e.g. `devCert.ca`), added to Node's bundled roots. */
  ca?: string | Buffer | Array<string | Buffer>
  /** Which addresses may be connected to. @default public unicast only (`createAddressPolicy()`) */
  addressPolicy?: AddressPolicy
  /**
   * Per request, from the call until the body is read (then a `TimeoutError` DOMException); `0`
   * or `Infinity` disables it (long-lived streams). @default PROFILE.requestTimeoutMs (30 s)
   */
  timeoutMs?: number
  /**
   * Most bytes of a response body read; past it the body fails with a `TypeError` and the
   * connection is closed, so a peer's endless answer costs a bounded amount of memory (PROFILE
   * §4). `Infinity` disables it. @default 8 MiB + 64 KiB (a relay's largest page), or `Infinity`
   * when `timeoutMs` is 0 (long-lived streams, capped per event by their reader)
   */
  maxResponseBytes?: number
  /** Resolves host names; the address policy still judges what it answers. @default dns.lookup */
  lookup?: net.LookupFunction
  /** Keep connections open for reuse by later requests of this fetch. @default true */
  keepAlive?: boolean
  /** Most concurrent connections per origin. @default Infinity */
  maxSockets?: number
  /** Most idle kept-alive connections in total. @default 256 */
  maxFreeSockets?: number
}

const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304])

function bodyBytes(body: unknown): Uint8Array | string {
  if (typeof body === 'string') return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  throw new TypeError('createNodeFetch supports string, Uint8Array and ArrayBuffer bodies only')
}

/**
 * A `fetch`-compatible function over `node:https` (PROFILE §4, §6):
 * - `https:` only, TLS ≥ 1.2, certificates always verified (`ca` adds to the bundled roots).
 * - A host written as an IP literal (any form the URL parser takes: `2130706433`, `0x7f.1`,
 *   `[::ffff:127.0.0.1]`) is judged by `addressPolicy` before anything is dialled; every other
 *   connection on the address connected to, after DNS, before the TLS handshake. A refused one
 *   rejects with an `AddressRefusedError` (`forbidden`), whether anything listens there or not.
 * - A response body past `maxResponseBytes` fails and the connection closes.
 * - Redirects are never followed (`'follow'` acts as `'manual'`; `'error'` rejects on them).
 * - Method, headers, string/Uint8Array/ArrayBuffer bodies (or a `Request`), `signal`, streamed
 *   answers. Network and TLS failures reject with a `TypeError` whose `cause` is Node's error,
 *   the timeout with a `TimeoutError` DOMException, an abort with the signal's reason.
 *
 * @example
 * const fetch = createNodeFetch({ ca: devCert.ca, addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }) })
 * const res = await fetch('https://127.0.0.1:8443/.well-known/agentmsg/identity')
 */
export function createNodeFetch(options: NodeFetchOptions = {}): typeof fetch {
  const policy = options.addressPolicy ?? createAddressPolicy()
  const requested = options.timeoutMs ?? PROFILE.requestTimeoutMs
  if (!(requested >= 0)) throw new RangeError('timeoutMs must be ≥ 0')
  // Past setTimeout's 2^31 − 1 ms limit (or Infinity) means "no timeout".
  const timeoutMs = requested > 2_147_483_647 ? 0 : requested
  const maxResponseBytes =
    options.maxResponseBytes ?? (timeoutMs > 0 ? PROFILE.pageMaxBytes : Infinity)
  if (!(maxResponseBytes >= 0)) throw new RangeError('maxResponseBytes must be ≥ 0')
  const ca =
    options.ca === undefined ? undefined : [...tls.rootCertificates, ...[options.ca].flat()]
  // One secure context for every connection. Passing `ca` itself would make Node rebuild a
  // context from ~150 root certificates per TLS connection, and https.Agent's pool key
  // (getName) would join all their PEM text on every request.
  const agent = new PolicyAgent({
    policy,
    connectTimeoutMs: timeoutMs,
    lookup: options.lookup,
    keepAlive: options.keepAlive ?? true,
    maxSockets: options.maxSockets,
    maxFreeSockets: options.maxFreeSockets ?? 256,
    minVersion: 'TLSv1.2',
    rejectUnauthorized: true,
    secureContext: ca && tls.createSecureContext({ ca, minVersion: 'TLSv1.2' }),
  })

  const nodeFetch = async (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    const request =
      typeof input === 'object' && !(input instanceof URL) ? (input as Request) : undefined
    const urlText = request ? request.url : String(input)
    if (!URL.canParse(urlText)) throw new TypeError(`invalid URL: ${urlText}`)
    const url = new URL(urlText)
    if (url.protocol !== 'https:') {
      throw new TypeError(
        `refusing ${url.protocol} URL ${url.href}: only https: is allowed (PROFILE §6)`,
      )
    }
    if (url.username || url.password) throw new TypeError('URLs with credentials are refused')
    // An IP literal (the URL parser has made `2130706433` or `0x7f.1` canonical) is judged
    // before any connection is opened (PROFILE §4).
    const literal = refusedLiteral(policy, url.hostname)
    if (literal) throw literal

    const method = (init.method ?? request?.method ?? 'GET').toUpperCase()
    const headers = new Headers(init.headers ?? request?.headers)
    const signal = init.signal ?? request?.signal ?? undefined
    const redirect = init.redirect ?? 'manual'
    let body: Uint8Array | string | undefined
    if (init.body !== undefined && init.body !== null) {
      body = bodyBytes(init.body)
      if (typeof body === 'string' && !headers.has('content-type')) {
        headers.set('content-type', 'text/plain;charset=UTF-8')
      }
    } else if (request && request.body !== null && init.body === undefined) {
      body = new Uint8Array(await request.arrayBuffer())
    }
    if ((method === 'GET' || method === 'HEAD') && body !== undefined) {
      throw new TypeError(`a ${method} request cannot have a body`)
    }
    signal?.throwIfAborted()
    const outgoing = Object.fromEntries(headers)
    if (body !== undefined) {
      const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength
      outgoing['content-length'] = String(length)
    }

    return new Promise<Response>((resolve, reject) => {
      let settled = false
      let bodyController: ReadableStreamDefaultController<Uint8Array> | undefined
      let timer: ReturnType<typeof setTimeout> | undefined

      const cleanup = () => {
        if (timer) clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
      // Fail the call if the response has not arrived yet, else the body stream.
      const fail = (reason: unknown) => {
        cleanup()
        if (!settled) {
          settled = true
          reject(reason)
        } else {
          // A stream already closed ignores it.
          bodyController?.error(reason)
          bodyController = undefined
        }
        req.destroy()
      }
      const onAbort = () => fail(signal!.reason)

      const req = https.request({
        agent,
        method,
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port === '' ? 443 : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers: outgoing,
      })
      const timedOut = `request to ${url.origin} timed out after ${timeoutMs} ms`
      if (timeoutMs > 0) {
        timer = setTimeout(() => fail(new DOMException(timedOut, 'TimeoutError')), timeoutMs)
      }
      signal?.addEventListener('abort', onAbort, { once: true })

      req.on('error', (err) => {
        if (err instanceof AddressRefusedError) return fail(err)
        fail(new TypeError(`fetch ${url.origin} failed: ${err.message || err}`, { cause: err }))
      })

      req.on('response', (res: IncomingMessage) => {
        const status = res.statusCode ?? 0
        if (redirect === 'error' && status >= 300 && status < 400) {
          res.resume()
          return fail(new TypeError(`unexpected redirect (${status}) from ${url.href}`))
        }
        if (status < 200 || status > 599) {
          res.resume()
          return fail(new TypeError(`unsupported status ${status} from ${url.href}`))
        }
        const responseHeaders = new Headers()
        const raw = res.rawHeaders
        for (let i = 0; i + 1 < raw.length; i += 2) {
          try {
            responseHeaders.append(raw[i]!, raw[i + 1]!)
          } catch {
            // a header value the Headers class refuses: drop it
          }
        }
        let stream: ReadableStream<Uint8Array> | null = null
        if (method === 'HEAD' || NULL_BODY_STATUS.has(status)) {
          res.resume()
          res.once('end', cleanup)
        } else {
          let ended = false
          let received = 0
          stream = new ReadableStream<Uint8Array>({
            start(controller) {
              bodyController = controller
              res.on('data', (chunk: Buffer) => {
                if (!bodyController) return
                received += chunk.byteLength
                if (received > maxResponseBytes) {
                  return fail(
                    new TypeError(
                      `response body from ${url.origin} is larger than ${maxResponseBytes} bytes`,
                    ),
                  )
                }
                controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
                if ((controller.desiredSize ?? 0) <= 0) res.pause()
              })
              res.once('end', () => {
                ended = true
                cleanup()
                if (!bodyController) return
                bodyController = undefined
                controller.close()
              })
              const broken = (err?: Error) => {
                if (ended || !bodyController) return
                fail(
                  new TypeError(
                    `response body from ${url.origin} was cut short`,
                    err ? { cause: err } : undefined,
                  ),
                )
              }
              res.once('error', broken)
              res.once('close', () => broken())
            },
            pull() {
              res.resume()
            },
            cancel() {
              bodyController = undefined
              cleanup()
              req.destroy()
            },
          })
        }
        const response = new Response(stream, {
          status,
          statusText: res.statusMessage ?? '',
          headers: responseHeaders,
        })
        Object.defineProperty(response, 'url', { value: url.href })
        settled = true
        resolve(response)
      })

      req.end(body)
    })
  }
  return nodeFetch as typeof fetch
}
