/**
 * The relay's routing (PROFILE §9) and the steps before an endpoint (§6): method and CORS
 * preflight, then the per-address limits before a byte of the body is read: the request rate,
 * then the bodies read at once, so stalled uploads from one address hold at most a few.
 */
import {
  type ClientLimits,
  discardBody,
  errorReply,
  onBodyDone,
  preflightReply,
} from '@agentmsg/core/server'
import { decodeSegment, type RelayReply, setRequestBucket } from './context.js'
import type { RequestTrace } from './relay-report.js'

/** The endpoints a route leads to; `trace` learns whether a publish's 202 was a duplicate. */
export interface RelayEndpoints {
  publish(request: Request, trace?: RequestTrace): Promise<RelayReply>
  subscribe(request: Request, url: URL): Promise<RelayReply>
  unsubscribe(request: Request, url: URL, subscriptionId: string): Promise<RelayReply>
  retrieve(request: Request, url: URL): Promise<RelayReply>
  acknowledge(request: Request, url: URL, messageId: string): Promise<RelayReply>
  acknowledgeMany(request: Request, url: URL): Promise<RelayReply>
  stream(request: Request, url: URL): Promise<RelayReply>
}

type Run = (
  e: RelayEndpoints,
  request: Request,
  url: URL,
  trace?: RequestTrace,
) => Promise<RelayReply>

/** Path → the endpoint's name (for logs and metrics: never the path), its methods, its run. */
const EXACT: Record<string, [string, string, Run]> = {
  '/relay/publish': ['publish', 'POST', (e, r, _u, t) => e.publish(r, t)],
  '/relay/subscribe': ['subscribe', 'POST', (e, r, u) => e.subscribe(r, u)],
  '/relay/messages': ['retrieve', 'GET', (e, r, u) => e.retrieve(r, u)],
  '/relay/stream': ['stream', 'GET', (e, r, u) => e.stream(r, u)],
  '/relay/ack': ['ack', 'POST', (e, r, u) => e.acknowledgeMany(r, u)],
}

/** The route of a path below the base path (the last segment decoded for the two below), or none. */
function match(path: string): [string, string, Run] | undefined {
  const exact = Object.hasOwn(EXACT, path) ? EXACT[path] : undefined
  if (exact !== undefined) return exact
  const below = (prefix: string) =>
    path.startsWith(prefix) && path.length > prefix.length
      ? decodeSegment(path.slice(prefix.length))
      : undefined
  const id = below('/relay/subscribe/')
  if (id !== undefined) return ['unsubscribe', 'DELETE', (e, r, u) => e.unsubscribe(r, u, id)]
  const messageId = below('/relay/messages/')
  if (messageId !== undefined) {
    return ['acknowledge', 'DELETE', (e, r, u) => e.acknowledge(r, u, messageId)]
  }
  return undefined
}

/** Who sent a request: the peer address, the relay's per-address limits, a trace for reports. */
export interface RequestClient {
  limits: ClientLimits
  address: string | undefined
  trace?: RequestTrace
}

/** Answer one request (no client address while the limits are on: a 500, thrown). */
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
  const route = match(path)
  if (route === undefined) return notFound(request)
  const [name, only, endpoint] = route
  const allow = `${only}, OPTIONS`
  const run = () => endpoint(endpoints, request, url, trace)
  if (trace) trace.route = name
  const method = request.method
  if (method === 'OPTIONS') {
    discardBody(request.body)
    return preflightReply(allow)
  }
  if (method !== only) {
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
  if (request.body === null) return run()
  // A read slot, ended as soon as the endpoint has read or discarded the body (or answered).
  const release = limits.startRead(bucket)
  if (typeof release !== 'function') {
    if (trace) trace.scope = 'reads'
    discardBody(request.body)
    return release
  }
  onBodyDone(request.body, release)
  try {
    return await run()
  } finally {
    release()
  }
}

function notFound(request: Request): RelayReply {
  discardBody(request.body)
  return errorReply('not_found', 'no such relay endpoint')
}
