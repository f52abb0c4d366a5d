import { nonDocumentLookup } from './document-lookup.js'
import { isAgentMsgError } from './errors.js'
import {
  type IdentityDocument,
  publicKeyOf,
  validateIdentityDocument,
} from './identity/document.js'
import type { AbortOptions } from './interfaces/storage.js'
import type { KeyStore } from './key-store.js'
import { Lru } from './lru.js'
import { PROFILE } from './profile.js'
import {
  chainResolvers,
  didKeyResolver,
  type KeyLookup,
  type KeyResolution,
  type KeyResolver,
} from './resolver.js'

/** What an identity-document fetcher reports; network policy is its job. */
export type IdentityFetchResult =
  | { status: 'ok'; document: unknown /** Cache-Control max-age */; maxAgeSeconds?: number }
  | { status: 'not_found'; reason: string }
  | { status: 'unavailable'; reason: string; retryAfter?: number }

/** Fetches the identity document of a URL agent (transport-https ships one). */
export type IdentityFetcher = (
  agentId: string,
  options?: AbortOptions,
) => Promise<IdentityFetchResult>

/** Options for {@link IdentityDocumentCache}. */
export interface IdentityDocumentResolverOptions {
  fetch: IdentityFetcher
  now?: () => number
  /** Most agents whose documents are cached. @default 10_000 */
  maxEntries?: number
  /** Called with each document fetched and valid (e.g. `reconcileWithDocument`); failures ignored. */
  onDocument?: (document: IdentityDocument) => unknown
}

interface Entry {
  document?: IdentityDocument
  notFound?: string
  expires: number
  lastFetch: number
}

/** URL agents' keys from their cached identity documents (level 2, PROFILE §4). */
export class IdentityDocumentCache implements KeyResolver {
  readonly #o: IdentityDocumentResolverOptions
  readonly #now: () => number
  readonly #entries: Lru<Entry>
  readonly #inflight = new Map<string, Promise<Entry | KeyResolution>>()

  constructor(options: IdentityDocumentResolverOptions) {
    this.#o = options
    this.#now = options.now ?? Date.now
    this.#entries = new Lru(options.maxEntries ?? 10_000)
  }

  /** The agent's document, fetched or cached, or why there is none (for now). */
  async document(
    agentId: string,
    options?: AbortOptions,
  ): Promise<IdentityDocument | KeyResolution> {
    const res = await this.#entry(agentId, false, options)
    return 'status' in res ? res : (res.entry.document ?? noDocument(res.entry))
  }

  /** The key from the signer's document; an unknown `key_id` refetches it (PROFILE §4). */
  async resolve(lookup: KeyLookup, options?: AbortOptions): Promise<KeyResolution> {
    const refused = nonDocumentLookup(lookup)
    if (refused) return refused
    const first = await this.#entry(lookup.agent, false, options)
    if ('status' in first) return first
    let entry = first.entry
    const notListed = (e: Entry): KeyResolution => ({
      status: 'not_found',
      reason:
        e.notFound ?? `${lookup.agent}'s identity document does not list key ${lookup.fragment}`,
      final: e.document !== undefined,
    })
    // A document's answer is `final`: the chain never falls through to pinned keys (PROFILE §5).
    const found = findKey(entry, lookup.fragment)
    if (found) return found
    if (first.fetched) return notListed(entry)
    // Unknown key_id: perhaps rotated. One forced refetch per interval; past that, "try later".
    const wait = entry.lastFetch + PROFILE.documentRefetchMs - this.#now()
    if (wait > 0 && entry.document) {
      return {
        status: 'unavailable',
        reason: `key ${lookup.fragment} is not in ${lookup.agent}'s cached document and it was fetched less than ${Math.round(PROFILE.documentRefetchMs / 1000)} s ago`,
        retryAfter: Math.max(1, Math.ceil(wait / 1000)),
        final: true,
      }
    }
    if (wait > 0) return noDocument(entry)
    const final = entry.document !== undefined
    const again = await this.#entry(lookup.agent, true, options)
    if ('status' in again) {
      return final && again.status === 'unavailable' ? { ...again, final } : again
    }
    entry = again.entry
    return findKey(entry, lookup.fragment) ?? notListed(entry)
  }

  async #entry(
    agentId: string,
    force: boolean,
    options?: AbortOptions,
  ): Promise<{ entry: Entry; fetched: boolean } | KeyResolution> {
    const cached = this.#entries.get(agentId)
    if (cached && !force && cached.expires > this.#now()) return { entry: cached, fetched: false }
    let pending = this.#inflight.get(agentId)
    if (!pending) {
      pending = this.#load(agentId, options).finally(() => this.#inflight.delete(agentId))
      this.#inflight.set(agentId, pending)
    }
    const loaded = await pending
    return 'status' in loaded ? loaded : { entry: loaded, fetched: true }
  }

  async #load(agentId: string, options?: AbortOptions): Promise<Entry | KeyResolution> {
    const res = await this.#o.fetch(agentId, options)
    const now = this.#now()
    if (res.status === 'unavailable') {
      return {
        status: 'unavailable',
        reason: res.reason,
        retryAfter: Math.max(1, res.retryAfter ?? 30),
      }
    }
    // A "no document" answer is remembered as long as a refetch would be refused anyway.
    const none = (reason: string): Entry => ({
      notFound: reason,
      expires: now + PROFILE.documentRefetchMs,
      lastFetch: now,
    })
    let entry: Entry
    if (res.status === 'not_found') entry = none(res.reason)
    else {
      try {
        const document = validateIdentityDocument(res.document, { expectedAgentId: agentId })
        const maxAge =
          res.maxAgeSeconds !== undefined ? res.maxAgeSeconds * 1000 : PROFILE.documentCacheMs
        entry = { document, expires: now + maxAge, lastFetch: now }
      } catch (e) {
        if (!isAgentMsgError(e)) throw e
        entry = none(`identity document refused: ${e.message}`)
      }
    }
    this.#entries.set(agentId, entry)
    if (entry.document && this.#o.onDocument) {
      try {
        await this.#o.onDocument(entry.document)
      } catch {
        // The document is final for lookups either way.
      }
    }
    return entry
  }
}

const noDocument = (e: Entry): KeyResolution => ({
  status: 'not_found',
  reason: e.notFound ?? 'no identity document',
})

function findKey(entry: Entry, fragment: string): KeyResolution | undefined {
  const doc = entry.document
  const key = doc?.keys.find((k) => k.key_id === fragment && k.type === 'ed25519')
  if (!doc || !key) return undefined
  const publicKey = publicKeyOf(key)
  return {
    status: 'found',
    key: { alg: 'ed25519', publicKey, source: 'identity-document', document: doc },
  }
}

/** A new {@link IdentityDocumentCache}. */
export function identityDocumentResolver(
  options: IdentityDocumentResolverOptions,
): IdentityDocumentCache {
  return new IdentityDocumentCache(options)
}

/** The resolver chain of PROFILE §4: identity documents → did:key → the key store. */
export function createKeyResolver(
  options: { keyStore?: KeyStore; fetchIdentity?: IdentityFetcher; now?: () => number } = {},
): KeyResolver {
  const chain: KeyResolver[] = []
  const { keyStore, fetchIdentity, now } = options
  if (fetchIdentity) {
    chain.push(
      new IdentityDocumentCache({
        fetch: fetchIdentity,
        ...(now ? { now } : {}),
        ...(keyStore ? { onDocument: (doc) => keyStore.reconcileWithDocument(doc) } : {}),
      }),
    )
  }
  chain.push(didKeyResolver())
  if (keyStore) chain.push(keyStore)
  return chain.length === 1 ? chain[0]! : chainResolvers(...chain)
}
