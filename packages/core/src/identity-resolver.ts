import { nonDocumentLookup } from './document-lookup.js'
import { isAgentMsgError } from './errors.js'
import type { IdentityDocument } from './identity/document.js'
import { publicKeyOf, validateIdentityDocument } from './identity/document.js'
import type { AbortOptions } from './interfaces/abort.js'
import type { KeyResolution, KeyResolver } from './resolver.js'

export { didKeyResolver } from './did-key-resolver.js'

/** What an identity-document fetcher reports. Network policy (https, addresses) is its job. */
export type IdentityFetchResult =
  | { status: 'ok'; document: unknown /** from Cache-Control max-age */; maxAgeSeconds?: number }
  | { status: 'not_found'; reason: string }
  | { status: 'unavailable'; reason: string; retryAfter?: number }

/** Fetches the identity document of a URL agent (transport-https ships one for `node:https`). */
export type IdentityFetcher = (
  agentId: string,
  options?: AbortOptions,
) => Promise<IdentityFetchResult>

/** Options for {@link identityDocumentResolver}. */
export interface IdentityDocumentResolverOptions {
  /** Performs the HTTPS request. */
  fetch: IdentityFetcher
  /** Injectable clock (ms). @default Date.now */
  now?: () => number
  /** Cache lifetime when the response has no max-age. @default 3_600_000 (1 h) */
  defaultMaxAgeMs?: number
  /** Minimum time between two forced refetches for one agent. @default 60_000 */
  refetchIntervalMs?: number
  /** How long a "no document" answer is remembered. @default 60_000 */
  negativeTtlMs?: number
  /** Most agents whose documents are cached. @default 10_000 */
  maxEntries?: number
  /**
   * Called with each document fetched and validated, e.g. `keyStore.reconcileWithDocument`
   * (PROFILE §5: introduced keys it does not list are dropped once it can be fetched). Its
   * failure is ignored: the document is final for key lookups either way.
   */
  onDocument?: (document: IdentityDocument) => unknown
}

interface Entry {
  document?: IdentityDocument
  notFound?: string
  expires: number
  lastFetch: number
}

/**
 * Resolves URL agents' keys from their identity documents (level 2), with a cache honouring
 * max-age, one forced refetch on an unknown key_id at most once a minute per agent, and
 * coalesced concurrent fetches (PROFILE §4). A document that fails validation, or whose
 * agent_id is not the agent's, counts as no document: `not_found`.
 */
export class IdentityDocumentCache implements KeyResolver {
  readonly #fetch: IdentityFetcher
  readonly #now: () => number
  readonly #defaultMaxAge: number
  readonly #refetchInterval: number
  readonly #negativeTtl: number
  readonly #max: number
  readonly #onDocument: ((document: IdentityDocument) => unknown) | undefined
  readonly #entries = new Map<string, Entry>()
  readonly #inflight = new Map<string, Promise<Entry | KeyResolution>>()

  constructor(options: IdentityDocumentResolverOptions) {
    this.#fetch = options.fetch
    this.#now = options.now ?? Date.now
    this.#defaultMaxAge = options.defaultMaxAgeMs ?? 3_600_000
    this.#refetchInterval = options.refetchIntervalMs ?? 60_000
    this.#negativeTtl = options.negativeTtlMs ?? 60_000
    this.#max = options.maxEntries ?? 10_000
    this.#onDocument = options.onDocument
  }

  /** The cached document of an agent, fetching it when missing or stale. */
  async document(
    agentId: string,
    options?: AbortOptions,
  ): Promise<IdentityDocument | KeyResolution> {
    const res = await this.#entry(agentId, false, options)
    if ('status' in res) return res
    return (
      res.entry.document ?? {
        status: 'not_found',
        reason: res.entry.notFound ?? 'no identity document',
      }
    )
  }

  /** Drop an agent's cached document (e.g. after it announced a rotation). */
  invalidate(agentId: string): void {
    this.#entries.delete(agentId)
  }

  async resolve(
    lookup: Parameters<KeyResolver['resolve']>[0],
    options?: AbortOptions,
  ): Promise<KeyResolution> {
    const refused = nonDocumentLookup(lookup)
    if (refused) return refused

    const first = await this.#entry(lookup.agent, false, options)
    if ('status' in first) return first
    let entry = first.entry
    let found = findKey(entry, lookup.fragment)
    if (found) return found
    // From here on, an agent with a document gets a `final` answer: a key its document does
    // not list is not found, and the chain never falls through to pinned or introduced keys
    // (PROFILE §5), nor while a refetch waits.
    const final = entry.document !== undefined
    // Fetched by this very lookup: the document's word is final.
    if (first.fetched) {
      return {
        status: 'not_found',
        reason:
          entry.notFound ??
          `${lookup.agent}'s identity document does not list key ${lookup.fragment}`,
        final,
      }
    }
    // Unknown key_id: the agent may have rotated since we cached its document. One forced
    // refetch, at most once a refetch interval; past that budget the answer is "try later",
    // never a verdict (PROFILE §4).
    const wait = entry.lastFetch + this.#refetchInterval - this.#now()
    if (wait > 0 && entry.document) {
      return {
        status: 'unavailable',
        reason: `key ${lookup.fragment} is not in ${lookup.agent}'s cached document and it was fetched less than ${Math.round(this.#refetchInterval / 1000)} s ago`,
        retryAfter: Math.max(1, Math.ceil(wait / 1000)),
        final,
      }
    }
    if (wait > 0) return { status: 'not_found', reason: entry.notFound ?? 'no identity document' }
    const again = await this.#entry(lookup.agent, true, options)
    if ('status' in again)
      return final && again.status === 'unavailable' ? { ...again, final } : again
    entry = again.entry
    found = findKey(entry, lookup.fragment)
    return (
      found ?? {
        status: 'not_found',
        reason:
          entry.notFound ??
          `${lookup.agent}'s identity document does not list key ${lookup.fragment}`,
        final: entry.document !== undefined,
      }
    )
  }

  async #entry(
    agentId: string,
    force: boolean,
    options?: AbortOptions,
  ): Promise<{ entry: Entry; fetched: boolean } | KeyResolution> {
    const now = this.#now()
    const cached = this.#entries.get(agentId)
    if (cached && !force && cached.expires > now) return { entry: cached, fetched: false }
    let pending = this.#inflight.get(agentId)
    if (!pending) {
      pending = this.#load(agentId, options).finally(() => this.#inflight.delete(agentId))
      this.#inflight.set(agentId, pending)
    }
    const loaded = await pending
    return 'status' in loaded ? loaded : { entry: loaded, fetched: true }
  }

  async #load(agentId: string, options?: AbortOptions): Promise<Entry | KeyResolution> {
    const res = await this.#fetch(agentId, options)
    const now = this.#now()
    let entry: Entry
    if (res.status === 'unavailable') {
      return {
        status: 'unavailable',
        reason: res.reason,
        retryAfter: Math.max(1, res.retryAfter ?? 30),
      }
    } else if (res.status === 'not_found') {
      entry = { notFound: res.reason, expires: now + this.#negativeTtl, lastFetch: now }
    } else {
      try {
        const document = validateIdentityDocument(res.document, { expectedAgentId: agentId })
        const maxAge =
          res.maxAgeSeconds !== undefined ? res.maxAgeSeconds * 1000 : this.#defaultMaxAge
        entry = { document, expires: now + maxAge, lastFetch: now }
      } catch (e) {
        if (!isAgentMsgError(e)) throw e
        entry = {
          notFound: `identity document refused: ${e.message}`,
          expires: now + this.#negativeTtl,
          lastFetch: now,
        }
      }
    }
    this.#entries.delete(agentId)
    this.#entries.set(agentId, entry)
    if (this.#entries.size > this.#max)
      this.#entries.delete(this.#entries.keys().next().value as string)
    if (entry.document && this.#onDocument) {
      try {
        await this.#onDocument(entry.document)
      } catch {
        // Lookups stay right without it: the document is final (see `resolve`).
      }
    }
    return entry
  }
}

function findKey(entry: Entry, fragment: string): KeyResolution | undefined {
  const doc = entry.document
  if (!doc) return undefined
  const key = doc.keys.find((k) => k.key_id === fragment && k.type === 'ed25519')
  if (!key) return undefined
  return {
    status: 'found',
    key: {
      alg: 'ed25519',
      publicKey: publicKeyOf(key),
      source: 'identity-document',
      document: doc,
    },
  }
}

/** Build an {@link IdentityDocumentCache} resolver. */
export function identityDocumentResolver(
  options: IdentityDocumentResolverOptions,
): IdentityDocumentCache {
  return new IdentityDocumentCache(options)
}
