import { didKeyResolver } from './did-key-resolver.js'
import { type IdentityFetcher, identityDocumentResolver } from './identity-resolver.js'
import type { KeyStore } from './key-store.js'
import { chainResolvers, type KeyResolver } from './resolver.js'

/** Options for {@link createKeyResolver}. */
export interface CreateKeyResolverOptions {
  /** Pinned keys, introduced keys and introduction tokens. */
  keyStore?: KeyStore
  /** Fetches URL agents' identity documents (transport-https provides one). */
  fetchIdentity?: IdentityFetcher
  /** Injectable clock for the document cache. */
  now?: () => number
}

/**
 * The standard resolver chain of PROFILE §4: identity documents (cached) → did:key →
 * pinned/introduced keys and introduction tokens. A URL agent's fetched document is final (a
 * key it does not list is not found, and introduced keys it lacks are dropped from the key
 * store, PROFILE §5).
 *
 * @example
 * const keyStore = new KeyStore()
 * const resolver = createKeyResolver({ keyStore })
 */
export function createKeyResolver(options: CreateKeyResolverOptions = {}): KeyResolver {
  const chain: KeyResolver[] = []
  const keyStore = options.keyStore
  if (options.fetchIdentity) {
    chain.push(
      identityDocumentResolver({
        fetch: options.fetchIdentity,
        ...(options.now ? { now: options.now } : {}),
        ...(keyStore ? { onDocument: (doc) => keyStore.reconcileWithDocument(doc) } : {}),
      }),
    )
  }
  chain.push(didKeyResolver())
  if (keyStore) chain.push(keyStore)
  return chainResolvers(...chain)
}
