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

type Route = 'publish' | 'subscribe' | 'unsubscribe' | 'retrieve' | 'acknowledge' | 'ack' | 'stream'

/**
 * The endpoints by route; `id`: the decoded last path segment (unsubscribe, acknowledge);
 * `trace` learns whether a publish's 202 was a duplicate.
 */
export type RelayEndpoints = Record<
  Route,
  (request: Request, url: URL, id: string, trace?: RequestTrace) => Promise<RelayReply>
>

/** Path → the route (its name in logs and metrics: never the path) and its method. */
const EXACT: Record<string, [Route, string]> = {
  '/relay/publish': ['publish', 'POST'],
  '/relay/subscribe': ['subscribe', 'POST'],
  '/relay/messages': ['retrieve', 'GET'],
  '/relay/stream': ['stream', 'GET'],
  '/relay/ack': ['ack', 'POST'],
}
/** The routes of the paths one segment below these. */
const BELOW: Array<[string, Route, string]> = [
  ['/relay/subscribe/', 'unsubscribe', 'DELETE'],
  ['/relay/messages/', 'acknowledge', 'DELETE'],
]

/** The route of a path below the base path, its method and id, or none. */
function match(path: string): [Route, string, string] | undefined {
  if (Object.hasOwn(EXACT, path)) return [...EXACT[path]!, '']
  for (const [prefix, route, method] of BELOW) {
    if (path.startsWith(prefix) && path.length > prefix.length) {
      return [route, method, decodeSegment(path.slice(prefix.length))]
    }
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
  const [name, only, id] = route
  const allow = `${only}, OPTIONS`
  const run = () => endpoints[name](request, url, id, trace)
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
