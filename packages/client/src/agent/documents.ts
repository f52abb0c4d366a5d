/**
 * URL agents' identity documents (PROFILE §4): core's `IdentityDocumentCache`, imported
 * (./url-identity.ts) the first time a URL agent is involved; and `lazy()` for such chunks.
 */
import type { AbortOptions, IdentityDocument, KeyResolver } from '@agentmsg/core'
import { nonDocumentLookup } from '@agentmsg/core/http'
import type { identityDocumentResolver } from '@agentmsg/core/identity'

type KeyLookup = Parameters<KeyResolver['resolve']>[0]
type KeyResolution = Awaited<ReturnType<KeyResolver['resolve']>>
type IdentityDocumentResolverOptions = Parameters<typeof identityDocumentResolver>[0]

/** What the router, the sealing and the receiver ask of the documents. */
export interface Documents extends KeyResolver {
  document(agentId: string, options?: AbortOptions): Promise<IdentityDocument | KeyResolution>
}

/**
 * `load()` on the first call, its promise after; one that failed (a chunk that did not
 * download) is tried again on the next call. `peek()`: the promise, without loading.
 */
export function lazy<T>(load: () => Promise<T>): {
  (): Promise<T>
  peek(): Promise<T> | undefined
} {
  let current: Promise<T> | undefined
  const get = (): Promise<T> => {
    const p = (current ??= load())
    p.catch(() => {
      if (current === p) current = undefined
    })
    return p
  }
  return Object.assign(get, { peek: () => current })
}

/** An {@link IdentityDocumentCache} built on first use. */
export function lazyDocuments(options: IdentityDocumentResolverOptions): Documents {
  const cache = lazy(() =>
    import('./url-identity.js').then((m) => m.identityDocumentResolver(options)),
  )
  return {
    document: async (agentId, opts) => (await cache()).document(agentId, opts),
    async resolve(lookup: KeyLookup, opts?: AbortOptions): Promise<KeyResolution> {
      // The cache's own answers for what it never fetches, given without loading it: a key
      // that is not Ed25519, or an agent that is not a URL agent (a did:key agent: every
      // message of one asks this resolver first).
      const refused = nonDocumentLookup(lookup)
      if (refused) return refused
      const documents = await cache().catch(() => undefined)
      // The chunk did not download: a failure for now, never a verdict (PROFILE §4).
      if (!documents) {
        const reason = 'identity document support could not be loaded'
        return { status: 'unavailable', reason, retryAfter: 30 }
      }
      return documents.resolve(lookup, opts)
    },
  }
}
