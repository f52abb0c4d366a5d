/**
 * Fetching a URL agent's identity document (PROFILE §4) over any `fetch`, whose job the address
 * policy is (on Node `createNodeFetch()`); here the HTTP part.
 */
import {
  agentEndpoints,
  type IdentityFetcher,
  isAgentMsgError,
  PROFILE,
  parseAgentId,
} from '@agentmsg/core'
import { deadline, httpRequest, readBody } from '@agentmsg/core/http'
import { INTEGER_MEMBERS, parseStrictJson } from '@agentmsg/core/receive'
import { discardBody, isAddressRefusedError } from '@agentmsg/core/server'

type IdentityFetchResult = Awaited<ReturnType<IdentityFetcher>>

/** Options for {@link createIdentityFetcher}. */
export interface IdentityFetcherOptions {
  /** Must honour `redirect: 'manual'`, should keep the address policy. @default globalThis.fetch */
  fetch?: typeof fetch
  /** Total time for the fetch, redirects and body included. @default PROFILE.documentTimeoutMs (5 s) */
  timeoutMs?: number
  /** Largest document accepted, in bytes. @default PROFILE.documentMaxBytes (64 KiB) */
  maxBytes?: number
  /** Most redirects followed, each only to the same origin. @default PROFILE.documentMaxRedirects (3) */
  maxRedirects?: number
}

/** `Retry-After` of a transient failure that does not say: the sender comes back soon. */
const DEFAULT_RETRY_AFTER_SECONDS = 30
/** Revocations reach every cache within a day, whatever max-age said. */
const MAX_CACHE_SECONDS = 86_400

/**
 * The cache lifetime a response allows, in seconds: `no-store`/`no-cache` → 0, `max-age=N`
 * (the smallest, if repeated) minus `Age`, at most a day; `undefined` when Cache-Control gives
 * no lifetime (the resolver's default then applies).
 */
export function cacheLifetime(
  cacheControl: string | null,
  age?: string | null,
): number | undefined {
  let maxAge: number | undefined
  for (const part of cacheControl?.split(',') ?? []) {
    const [rawName, ...rest] = part.split('=')
    const name = rawName!.trim().toLowerCase()
    if (name === 'no-store' || name === 'no-cache') return 0
    if (name !== 'max-age') continue
    const value = rest
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1')
    // A malformed max-age makes the response stale (RFC 9111 §4.2.1).
    if (!/^[0-9]+$/.test(value)) return 0
    maxAge = Math.min(maxAge ?? Infinity, Number(value))
  }
  if (maxAge === undefined) return undefined
  const ageSeconds = age && /^[0-9]+$/.test(age.trim()) ? Number(age.trim()) : 0
  return Math.max(0, Math.min(MAX_CACHE_SECONDS, maxAge) - ageSeconds)
}

const notFound = (reason: string): IdentityFetchResult => ({ status: 'not_found', reason })

/**
 * An {@link IdentityFetcher} (PROFILE §4): GET `{agent_id}/.well-known/agentmsg/identity` with
 * `Accept: application/json`, redirects followed only within the same origin, the body read
 * with a running byte count up to `maxBytes`, parsed as strict I-JSON; `Cache-Control` gives
 * `maxAgeSeconds`. Only the transport is judged here; the resolver validates the document.
 *
 * Verdicts (`not_found`): a non-URL agent id; an answer other than 200 that will not pass
 * (404, 410, other 4xx, 3xx past the limit or to another origin); a document over the cap or
 * not I-JSON; an address refused by the policy. Transient (`unavailable`, `retryAfter` from
 * `Retry-After`, else 30 s, at most the 1 h retry cap): what `AgentMsgError.shouldRetry()`
 * retries (5xx, 429, 408), timeouts, network and TLS errors. The caller's abort rejects with
 * its reason.
 *
 * A request that failed is reported as only that (`the identity document of … could not be
 * fetched`), never with the socket, TLS or DNS detail: the reason reaches whoever sent the
 * message, and would make the receiver a port scanner for strangers (PROFILE §4).
 *
 * @example
 * const fetchIdentity = createIdentityFetcher({ fetch: createNodeFetch({ ca }) })
 * const resolver = createKeyResolver({ fetchIdentity })
 */
export function createIdentityFetcher(options: IdentityFetcherOptions = {}): IdentityFetcher {
  const timeoutMs = Math.min(options.timeoutMs ?? PROFILE.documentTimeoutMs, 2 ** 31 - 1)
  if (!(timeoutMs > 0)) throw new RangeError('timeoutMs must be > 0')
  const maxBytes = options.maxBytes ?? PROFILE.documentMaxBytes
  const maxRedirects = options.maxRedirects ?? PROFILE.documentMaxRedirects

  return async (agentId, callOptions) => {
    let start: URL
    try {
      if (parseAgentId(agentId).kind !== 'url') return notFound(`${agentId} is not a URL agent`)
      start = new URL(agentEndpoints(agentId).identity)
    } catch (e) {
      if (isAgentMsgError(e)) return notFound(`not an agent id: ${e.message}`)
      throw e
    }
    const outer = callOptions?.signal
    outer?.throwIfAborted()
    const failed = `the identity document of ${agentId} could not be fetched`
    const unavailable = (retryAfter = DEFAULT_RETRY_AFTER_SECONDS): IdentityFetchResult => ({
      status: 'unavailable',
      reason: failed,
      retryAfter: Math.min(PROFILE.retryCapMs / 1000, Math.max(1, retryAfter)),
    })
    const d = deadline(timeoutMs, failed, outer)
    let location: string | null = null
    const doFetch = options.fetch ?? globalThis.fetch
    const fetchHop: typeof fetch = async (input, init) => {
      const response = await doFetch(input, init)
      location = response.headers.get('location')
      return response
    }
    const read = async (response: Response, signal: AbortSignal) => {
      const { status, headers } = response
      if (status !== 200) discardBody(response.body)
      const bytes = status === 200 ? await readBody(response, { maxBytes, signal }) : undefined
      return { status, headers, bytes }
    }
    try {
      for (let url = start, redirects = 0; ; redirects++) {
        let answer: Awaited<ReturnType<typeof read>>
        try {
          answer = await httpRequest(
            url.href,
            {
              fetch: fetchHop,
              method: 'GET',
              headers: { accept: 'application/json' },
              signal: d.signal,
              timeoutMs: 0,
            },
            read,
          )
        } catch (e) {
          if (outer?.aborted) throw outer.reason
          // A refused address is not found (PROFILE §4); neither says which address or why.
          if (isAddressRefusedError(e)) return notFound(failed)
          if (!isAgentMsgError(e)) return unavailable()
          const status = e.peerStatus
          if (status === undefined || e.shouldRetry()) return unavailable(e.retryAfter)
          if (status < 300 || status > 399) return notFound(`${url.href} answered ${status}`)
          const next =
            location !== null && URL.canParse(location, url) ? new URL(location, url) : undefined
          if (!next || ![301, 302, 303, 307, 308].includes(status)) {
            return notFound(`${url.href} answered ${status} without a usable Location`)
          }
          if (next.origin !== start.origin) {
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
        // A success other than 200: the server's answer is "no document".
        if (answer.status !== 200) return notFound(`${url.href} answered ${answer.status}`)
        if (answer.bytes === undefined) {
          return notFound(
            `identity document of ${agentId} is too large (more than ${maxBytes} bytes)`,
          )
        }
        let document: unknown
        try {
          // PROFILE §1: `agentmsg` written without fraction or exponent.
          document = parseStrictJson(answer.bytes, { integerMembers: INTEGER_MEMBERS })
        } catch (e) {
          if (!isAgentMsgError(e)) throw e
          return notFound(`identity document of ${agentId} is not valid I-JSON: ${e.message}`)
        }
        const { headers } = answer
        const maxAgeSeconds = cacheLifetime(headers.get('cache-control'), headers.get('age'))
        return maxAgeSeconds === undefined
          ? { status: 'ok', document }
          : { status: 'ok', document, maxAgeSeconds }
      }
    } finally {
      d.clear()
    }
  }
}
