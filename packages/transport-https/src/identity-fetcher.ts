/**
 * Fetching a URL agent's identity document (PROFILE §4), over any `fetch`. Isomorphic: the
 * address policy is the fetch function's job (on Node use `createNodeIdentityFetcher`, whose
 * fetch checks every connection); this module does the HTTP part: one GET, same-origin
 * redirects, the size cap, strict JSON, Cache-Control and the verdict/transient split.
 *
 * @packageDocumentation
 */
import { agentEndpoints, type IdentityFetcher, isAgentMsgError, parseAgentId } from '@agentmsg/core'
import { INTEGER_MEMBERS, parseStrictJson } from '@agentmsg/core/encoding'
import type { IdentityFetchResult } from '@agentmsg/core/receive'
import { isAddressRefusedError } from './address-policy.js'
import { parseRetryAfter as parseRetryAfterMs } from './retry.js'

/** Options for {@link createIdentityFetcher}. */
export interface IdentityFetcherOptions {
  /**
   * The fetch to use. It must not follow redirects itself when asked for `redirect: 'manual'`,
   * and should enforce the address policy (Node: `createNodeFetch`). @default globalThis.fetch
   */
  fetch?: typeof fetch
  /** Total time for the fetch, redirects and body included. @default 5000 */
  timeoutMs?: number
  /** Largest document accepted, in bytes. @default 65536 */
  maxBytes?: number
  /** Most redirects followed, each only to the same origin. @default 3 */
  maxRedirects?: number
}

/** Retry-After used when a transient failure does not say. */
export const DEFAULT_RETRY_AFTER_SECONDS = 30
/** Retry-After values above this are clamped (the sender's backoff is capped at 1 h, PROFILE §6). */
export const MAX_RETRY_AFTER_SECONDS = 3600
/** max-age values above this are clamped, so that revocations reach every cache within a day. */
export const MAX_CACHE_SECONDS = 86_400

/**
 * A Retry-After value (delta-seconds or an HTTP-date) in whole seconds, 1 to
 * {@link MAX_RETRY_AFTER_SECONDS}; `undefined` when absent or malformed.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  const ms = parseRetryAfterMs(value, now)
  if (ms === undefined) return undefined
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(ms / 1000)))
}

/**
 * The cache lifetime a response allows, in seconds: `no-store`/`no-cache` → 0, `max-age=N`
 * (the smallest, if repeated) minus `Age`, clamped to {@link MAX_CACHE_SECONDS}; `undefined` when
 * Cache-Control gives no lifetime (the resolver's default of 1 h then applies).
 */
export function cacheLifetime(
  cacheControl: string | null,
  age?: string | null,
): number | undefined {
  if (cacheControl === null) return undefined
  let maxAge: number | undefined
  for (const part of cacheControl.split(',')) {
    const [rawName, ...rest] = part.split('=')
    const name = rawName!.trim().toLowerCase()
    if (name === 'no-store' || name === 'no-cache') return 0
    if (name === 'max-age') {
      const value = rest
        .join('=')
        .trim()
        .replace(/^"(.*)"$/, '$1')
      // A malformed max-age makes the response stale (RFC 9111 §4.2.1).
      if (!/^[0-9]+$/.test(value)) return 0
      maxAge = Math.min(maxAge ?? Infinity, Number(value))
    }
  }
  if (maxAge === undefined) return undefined
  const ageSeconds = age && /^[0-9]+$/.test(age.trim()) ? Number(age.trim()) : 0
  return Math.max(0, Math.min(MAX_CACHE_SECONDS, maxAge) - ageSeconds)
}

const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308])

const notFound = (reason: string): IdentityFetchResult => ({ status: 'not_found', reason })
const unavailable = (reason: string, retryAfter?: number): IdentityFetchResult => ({
  status: 'unavailable',
  reason,
  retryAfter: retryAfter ?? DEFAULT_RETRY_AFTER_SECONDS,
})

/**
 * The one reason given for a request that failed (network, TLS, DNS, refused address, timeout,
 * 5xx, a body cut short). Reasons reach the sender in 401 and 503 bodies, so they say only that
 * the request failed: socket, TLS or DNS text, or telling a timeout from a refused connection,
 * would make the receiver a port scanner for strangers (PROFILE §4).
 */
export function requestFailed(agentId: string): string {
  return `the identity document of ${agentId} could not be fetched`
}

/**
 * An {@link IdentityFetcher} (PROFILE §4): GET `{agent_id}/.well-known/agentmsg/identity` with
 * `Accept: application/json`, redirects followed only within the same origin (at most
 * `maxRedirects`), the body read with a running byte count up to `maxBytes`, parsed as strict
 * I-JSON; `Cache-Control` gives `maxAgeSeconds`. Only the transport is judged here; the
 * resolver validates the document itself.
 *
 * Verdicts (`not_found`): a non-URL agent id; 404, 410 and other 4xx; a redirect elsewhere, a
 * redirect loop past the limit; a document over the size cap or that is not I-JSON; an address
 * refused by the policy. Transient (`unavailable`, `retryAfter` from Retry-After or 30 s):
 * 5xx, 429, 408, timeout, network and TLS errors. An abort through the caller's signal rejects
 * with its reason.
 *
 * Reasons end up in replies to whoever sent the message: a request that failed (refused
 * address, network, TLS, DNS, timeout, 5xx) is reported as {@link requestFailed} alone, never
 * with the socket, TLS or DNS detail (PROFILE §4). The body is read with a running byte count
 * and the connection dropped at `maxBytes`, so an endless answer costs at most that.
 *
 * @example
 * const fetchIdentity = createIdentityFetcher({ fetch: createNodeFetch({ ca }) })
 * const resolver = createKeyResolver({ fetchIdentity })
 */
export function createIdentityFetcher(options: IdentityFetcherOptions = {}): IdentityFetcher {
  const timeoutMs = Math.min(options.timeoutMs ?? 5_000, 2_147_483_647)
  if (!(timeoutMs > 0)) throw new RangeError('timeoutMs must be > 0')
  const maxBytes = options.maxBytes ?? 65_536
  const maxRedirects = options.maxRedirects ?? 3

  return async (agentId, callOptions) => {
    const doFetch = options.fetch ?? globalThis.fetch
    let start: URL
    try {
      if (parseAgentId(agentId).kind !== 'url') return notFound(`${agentId} is not a URL agent`)
      start = new URL(agentEndpoints(agentId).identity)
    } catch (e) {
      if (isAgentMsgError(e)) return notFound(`not an agent id: ${e.message}`)
      throw e
    }
    const outer = callOptions?.signal
    if (outer?.aborted) throw outer.reason
    const controller = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'))
    }, timeoutMs)
    const onOuterAbort = () => controller.abort(outer!.reason)
    outer?.addEventListener('abort', onOuterAbort, { once: true })
    const interrupted = (): IdentityFetchResult | undefined => {
      if (outer?.aborted) throw outer.reason
      if (timedOut) return unavailable(requestFailed(agentId))
      return undefined
    }

    try {
      let url = start
      for (let redirects = 0; ; redirects++) {
        let response: Response
        try {
          response = await doFetch(url.href, {
            method: 'GET',
            headers: { accept: 'application/json' },
            redirect: 'manual',
            signal: controller.signal,
          })
        } catch (e) {
          const stop = interrupted()
          if (stop) return stop
          // A refused address is not found (PROFILE §4); neither says which address or why.
          if (isAddressRefusedError(e)) return notFound(requestFailed(agentId))
          return unavailable(requestFailed(agentId))
        }
        const status = response.status

        if ((status >= 300 && status < 400) || response.type === 'opaqueredirect') {
          await discard(response)
          const location = response.headers.get('location')
          if (!REDIRECT_STATUS.has(status) || location === null) {
            return notFound(
              `${url.href} answered ${status || 'an opaque redirect'} without a usable Location`,
            )
          }
          let next: URL
          try {
            next = new URL(location, url)
          } catch {
            return notFound(`${url.href} redirected to an invalid URL`)
          }
          if (next.origin !== start.origin || next.protocol !== 'https:') {
            return notFound(
              `${url.href} redirected to another origin (${next.origin}); only ${start.origin} may serve the document`,
            )
          }
          if (redirects >= maxRedirects) {
            return notFound(`identity document of ${agentId}: more than ${maxRedirects} redirects`)
          }
          next.hash = ''
          url = next
          continue
        }

        if (status !== 200) {
          await discard(response)
          const retryAfter = parseRetryAfter(response.headers.get('retry-after'))
          if (status >= 500 || status === 429 || status === 408) {
            return unavailable(requestFailed(agentId), retryAfter)
          }
          // 404, 410, other 4xx, and a success other than 200: the server's answer is "no document".
          return notFound(`${url.href} answered ${status}`)
        }

        const declared = response.headers.get('content-length')
        if (declared !== null && /^[0-9]+$/.test(declared.trim()) && Number(declared) > maxBytes) {
          await discard(response)
          return notFound(
            `identity document of ${agentId} is too large (${declared} bytes, at most ${maxBytes})`,
          )
        }
        let bytes: Uint8Array | 'too_large'
        try {
          bytes = await readCapped(response, maxBytes, controller.signal)
        } catch {
          const stop = interrupted()
          if (stop) return stop
          return unavailable(requestFailed(agentId))
        }
        const stop = interrupted()
        if (stop) return stop
        if (bytes === 'too_large') {
          return notFound(
            `identity document of ${agentId} is too large (more than ${maxBytes} bytes)`,
          )
        }
        let document: unknown
        try {
          // PROFILE §1: `agentmsg` written without fraction or exponent.
          document = parseStrictJson(bytes, { integerMembers: INTEGER_MEMBERS })
        } catch (e) {
          if (!isAgentMsgError(e)) throw e
          return notFound(`identity document of ${agentId} is not valid I-JSON: ${e.message}`)
        }
        const maxAgeSeconds = cacheLifetime(
          response.headers.get('cache-control'),
          response.headers.get('age'),
        )
        return maxAgeSeconds === undefined
          ? { status: 'ok', document }
          : { status: 'ok', document, maxAgeSeconds }
      }
    } finally {
      clearTimeout(timer)
      outer?.removeEventListener('abort', onOuterAbort)
    }
  }
}

async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel()
  } catch {
    // nothing to do
  }
}

/** Read a body, counting bytes; stop and cancel past `maxBytes`. */
async function readCapped(
  response: Response,
  maxBytes: number,
  signal: AbortSignal,
): Promise<Uint8Array | 'too_large'> {
  if (!response.body) return new Uint8Array(0)
  const reader = response.body.getReader()
  const onAbort = () => {
    reader.cancel(signal.reason).catch(() => {})
  }
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    const chunks: Uint8Array[] = []
    let total = 0
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > maxBytes) {
        await reader.cancel().catch(() => {})
        return 'too_large'
      }
      chunks.push(value)
    }
    if (signal.aborted) throw signal.reason
    const out = new Uint8Array(total)
    let at = 0
    for (const c of chunks) {
      out.set(c, at)
      at += c.byteLength
    }
    return out
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}
