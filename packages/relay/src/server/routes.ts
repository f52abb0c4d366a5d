/**
 * The relay's routing (PROFILE §9) and the steps before an endpoint (§6): method and CORS
 * preflight, then the per-address limits before a byte of the body is read: the request rate,
 * then the bodies read at once, so stalled uploads from one address hold at most a few.
 */
import {
  type ClientLimits,
  discardBody,
  errorReply,
  type HttpReply,
  onBodyDone,
  preflightReply,
} from '@agentmsg/core/server'
import { decodeSegment, type RelayReply, setRequestBucket } from './context.js'
import type { RequestTrace } from './relay-report.js'

type Route = 'publish' | 'subscribe' | 'unsubscribe' | 'retrieve' | 'acknowledge' | 'ack' | 'stream'

/** The endpoints by route; `id`: the last path segment, decoded; `trace`: what they did. */
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

/** Answer one request from `address` (none while the limits are on: a 500, thrown). */
export async function dispatch(
  request: Request,
  basePath: string,
  endpoints: RelayEndpoints,
  limits: ClientLimits,
  address: string | undefined,
  trace: RequestTrace,
): Promise<RelayReply> {
  const url = new URL(request.url)
  const { pathname } = url
  const route = match(pathname.startsWith(`${basePath}/`) ? pathname.slice(basePath.length) : '')
  // Answered before the body is read: it is discarded.
  const early = (reply: HttpReply) => (discardBody(request), reply)
  if (route === undefined) return early(errorReply('not_found', 'no such relay endpoint'))
  const [name, only, id] = route
  trace.route = name
  const allow = `${only}, OPTIONS`
  const { method } = request
  if (method === 'OPTIONS') return early(preflightReply(allow))
  if (method !== only) {
    const message = `${method} is not allowed here; allowed: ${allow}`
    return early(errorReply('method_not_allowed', message, { headers: { allow } }))
  }
  // 2. Per-address limits, before a byte of the body is read.
  const forwardedFor = () => request.headers.get('x-forwarded-for')
  const bucket = limits.bucket(address, forwardedFor)
  trace.bucket = bucket
  const wait = limits.take(bucket)
  if (wait > 0) {
    trace.scope = 'address'
    const message = `too many requests from this address; retry in ${wait} s`
    return early(errorReply('rate_limited', message, { retryAfter: wait }))
  }
  setRequestBucket(request, bucket, () => limits.storageBucket(address, forwardedFor))
  const run = () => endpoints[name](request, url, id, trace)
  // A GET has no body to read.
  if (method === 'GET') return run()
  // A read slot, ended as soon as the endpoint has read or discarded the body (or answered).
  const release = limits.startRead(bucket)
  if (typeof release !== 'function') {
    trace.scope = 'reads'
    return early(release)
  }
  onBodyDone(request, release)
  return run().finally(release)
}
