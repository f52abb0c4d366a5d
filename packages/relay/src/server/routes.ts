/**
 * The relay's HTTP routing (PROFILE §9 endpoint table) and the steps every request takes before
 * its endpoint runs (PROFILE §6): method (with CORS preflights), then the per-address limits,
 * before a byte of the body is read: the request rate, then the bodies read at once (8 per
 * address bucket, 128 overall), so stalled uploads from one address hold at most 8 bodies.
 */
import {
  type ClientLimits,
  discardBody,
  errorReply,
  onBodyDone,
  preflightReply,
} from '@agentmsg/core/http'
import { decodeSegment, type RelayReply, setRequestBucket } from './context.js'
import type { RequestTrace } from './relay-report.js'

const POST_ONLY = 'POST, OPTIONS'
const GET_ONLY = 'GET, OPTIONS'
const DELETE_ONLY = 'DELETE, OPTIONS'

/** The endpoints a route leads to. */
export interface RelayEndpoints {
  /** `trace` learns whether the 202 was for a duplicate. */
  publish(request: Request, trace?: RequestTrace): Promise<RelayReply>
  subscribe(request: Request, url: URL): Promise<RelayReply>
  unsubscribe(request: Request, url: URL, subscriptionId: string): Promise<RelayReply>
  retrieve(request: Request, url: URL): Promise<RelayReply>
  acknowledge(request: Request, url: URL, messageId: string): Promise<RelayReply>
  acknowledgeMany(request: Request, url: URL): Promise<RelayReply>
  stream(request: Request, url: URL): Promise<RelayReply>
}

interface Route {
  /** The endpoint's name, for logs and metrics (never the path: it names agents and messages). */
  name: string
  allow: string
  run: () => Promise<RelayReply>
}

/** The route of a path below the base path, or undefined (404). */
function match(
  path: string,
  request: Request,
  url: URL,
  e: RelayEndpoints,
  trace: RequestTrace | undefined,
): Route | undefined {
  const below = (prefix: string) =>
    path.startsWith(prefix) && path.length > prefix.length
      ? decodeSegment(path.slice(prefix.length))
      : undefined
  if (path === '/relay/publish') {
    return { name: 'publish', allow: POST_ONLY, run: () => e.publish(request, trace) }
  }
  if (path === '/relay/subscribe') {
    return { name: 'subscribe', allow: POST_ONLY, run: () => e.subscribe(request, url) }
  }
  if (path === '/relay/messages') {
    return { name: 'retrieve', allow: GET_ONLY, run: () => e.retrieve(request, url) }
  }
  if (path === '/relay/stream') {
    return { name: 'stream', allow: GET_ONLY, run: () => e.stream(request, url) }
  }
  if (path === '/relay/ack') {
    return { name: 'ack', allow: POST_ONLY, run: () => e.acknowledgeMany(request, url) }
  }
  const subscription = below('/relay/subscribe/')
  if (subscription !== undefined) {
    return {
      name: 'unsubscribe',
      allow: DELETE_ONLY,
      run: () => e.unsubscribe(request, url, subscription),
    }
  }
  const messageId = below('/relay/messages/')
  if (messageId !== undefined) {
    return {
      name: 'acknowledge',
      allow: DELETE_ONLY,
      run: () => e.acknowledge(request, url, messageId),
    }
  }
  return undefined
}

/** Who sent a request, for the per-address limits. */
export interface RequestClient {
  /** The relay's per-address limits. */
  limits: ClientLimits
  /** The connection's peer address, as the server adapter gave it. */
  address: string | undefined
  /** Filled in as the request is routed and limited, for reports (relay-report.ts). */
  trace?: RequestTrace
}

/**
 * Answer one request: route it, check its method, apply the per-address limits (`client`; a
 * request without an address while they are on throws `MissingClientAddressError`, answered
 * 500), then run the endpoint.
 */
export async function dispatch(
  request: Request,
  basePath: string,
  endpoints: RelayEndpoints,
  client: RequestClient,
): Promise<RelayReply> {
  const url = new URL(request.url)
  let path = url.pathname
  if (basePath !== '') {
    if (!path.startsWith(`${basePath}/`)) return notFound(request)
    path = path.slice(basePath.length)
  }
  const { trace } = client
  const route = match(path, request, url, endpoints, trace)
  if (route === undefined) return notFound(request)
  const { allow, name } = route
  if (trace) trace.route = name
  const method = request.method
  // 1. Method.
  if (method === 'OPTIONS') {
    discardBody(request.body)
    return preflightReply(allow)
  }
  if (!allow.split(', ').includes(method)) {
    discardBody(request.body)
    return errorReply('method_not_allowed', `${method} is not allowed here; allowed: ${allow}`, {
      headers: { allow },
    })
  }
  // 2. Per-address limits, before a byte of the body is read.
  const { limits } = client
  const bucket = limits.bucket(client.address, () => request.headers.get('x-forwarded-for'))
  if (trace) trace.bucket = bucket
  const wait = limits.take(bucket)
  if (wait > 0) {
    if (trace) trace.scope = 'address'
    discardBody(request.body)
    return errorReply('rate_limited', `too many requests from this address; retry in ${wait} s`, {
      retryAfter: wait,
    })
  }
  setRequestBucket(request, bucket)
  if (request.body === null) return route.run()
  // A read slot, ended as soon as the endpoint has read or discarded the body (or answered).
  const release = limits.startRead(bucket)
  if (typeof release !== 'function') {
    if (trace) trace.scope = 'reads'
    discardBody(request.body)
    return release
  }
  onBodyDone(request.body, release)
  try {
    return await route.run()
  } finally {
    release()
  }
}

function notFound(request: Request): RelayReply {
  discardBody(request.body)
  return errorReply('not_found', 'no such relay endpoint')
}
