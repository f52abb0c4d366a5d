/** How relay answers (HTTP and WebSocket alike) become observer reports. */
import { performance } from 'node:perf_hooks'
import type { ErrorCode } from '@agentmsg/core'
import { ERROR_STATUS } from '@agentmsg/core/http'
import type { HttpReply } from '@agentmsg/core/server'
import type { RelayStore } from '../store/types.js'
import type { RateLimitScope, RefusedRequest, RelayObserver } from './types.js'

/** The status PROFILE §6 gives a code, or undefined for a code it does not name. */
export const codeStatus = (code: string): number | undefined =>
  Object.hasOwn(ERROR_STATUS, code) ? ERROR_STATUS[code as ErrorCode] : undefined

/** What one request did, filled in as it is answered (routes.ts). */
export interface RequestTrace {
  /** The endpoint's name (`unknown` until routed). */
  route: string
  /** The client-address bucket, once computed. */
  bucket?: string | undefined
  /** The limit that refused it before its endpoint ran. */
  scope?: RateLimitScope
  /** A publish answered 202 without storing: a duplicate (PROFILE §9). */
  duplicate?: boolean
}

/** A 429 refused by an endpoint: the per-route cap (PROFILE §6 per-sender, §9 caps). */
const ROUTE_SCOPE: Readonly<Record<string, RateLimitScope>> = {
  publish: 'sender',
  stream: 'streams',
  subscribe: 'subscriptions',
}

/** The error code of an error reply's JSON body (`{"status":"error","code":…}`). */
export const replyCode = (body: string | null | undefined): string =>
  knownCode(/"code":"([a-z_]{1,40})"/.exec(body ?? '')?.[1] ?? '')

/** A known code, or `other`: label values stay within the PROFILE's set. */
export const knownCode = (code: string) => (codeStatus(code) !== undefined ? code : 'other')

/** Report a refusal: the log line, an auth failure (401/403), a rate-limit hit. */
export function reportRefused(o: RelayObserver, refused: RefusedRequest, scope?: RateLimitScope) {
  o.refused?.(refused)
  if (refused.status === 401 || refused.status === 403) o.authFailed?.(refused.code)
  if (refused.code === 'rate_limited') {
    const by = scope ?? ROUTE_SCOPE[refused.route]
    if (by !== undefined) o.rateLimited?.(by)
  }
}

/** Report the answer `reply` to one HTTP request; its `code` label, the request span's too. */
export function reportReply(
  observer: RelayObserver | undefined,
  method: string,
  trace: RequestTrace,
  reply: HttpReply,
): string | undefined {
  const { status } = reply
  const publish = trace.route === 'publish' && method === 'POST'
  const code = status >= 400 ? replyCode(reply.body) : undefined
  const label = publish ? (code ?? (trace.duplicate ? 'duplicate' : 'accepted')) : code
  if (publish) observer?.published?.(label!)
  if (code === undefined || observer === undefined) return label
  const { route, bucket } = trace
  const refused = { code, status, route, method, ...(bucket !== undefined && { bucket }) }
  reportRefused(observer, refused, trace.scope)
  return label
}

const OBSERVER_KEYS =
  'refused published authFailed rateLimited delivered streamOpened streamClosed storeWrite'.split(
    ' ',
  ) as Array<keyof RelayObserver>

/** One observer that tells each of `observers` (skipping undefined ones), or undefined. */
export function combineObservers(
  ...observers: Array<RelayObserver | undefined>
): RelayObserver | undefined {
  const list = observers.filter((o): o is RelayObserver => o !== undefined)
  if (list.length <= 1) return list[0]
  const each =
    (key: keyof RelayObserver) =>
    (...args: unknown[]) => {
      for (const o of list) (o[key] as ((...a: unknown[]) => void) | undefined)?.call(o, ...args)
    }
  return Object.fromEntries(OBSERVER_KEYS.map((key) => [key, each(key)]))
}

/** `store` with publishes and (answered) acks timed to their durable commit. */
export function timedStore(store: RelayStore, observer: RelayObserver): RelayStore {
  const timed = async <T>(op: 'publish' | 'ack', write: Promise<T>) => {
    const start = performance.now()
    const result = await write
    observer.storeWrite?.(op, (performance.now() - start) / 1000)
    return result
  }
  const replaced: Partial<RelayStore> = {
    publish: (input, hooks) => timed('publish', store.publish(input, hooks)),
    // A lazy ack (a WebSocket frame) waits for the next commit on purpose: untimed.
    ack: (mailbox, id, from, options) =>
      options?.lazy === true
        ? store.ack(mailbox, id, from, options)
        : timed('ack', store.ack(mailbox, id, from, options)),
  }
  // A proxy: the store may be a class with private fields, its methods bound to it.
  return new Proxy(store, {
    get(target, prop) {
      if (Object.hasOwn(replaced, prop)) return replaced[prop as keyof RelayStore]
      const value: unknown = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
