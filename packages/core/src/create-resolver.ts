import { didKeyResolver, identityDocumentResolver, type IdentityFetcher } from './identity-resolver.js'
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
 * pinned/introduced keys and introduction tokens.
 *
 * @example
 * const keyStore = new KeyStore()
 * const resolver = createKeyResolver({ keyStore })
 */
export function createKeyResolver(options: CreateKeyResolverOptions = {}): KeyResolver {
  const chain: KeyResolver[] = []
  if (options.fetchIdentity) {
    chain.push(identityDocumentResolver({ fetch: options.fetchIdentity, ...(options.now ? { now: options.now } : {}) }))
  }
  chain.push(didKeyResolver())
  if (options.keyStore) chain.push(options.keyStore)
  return chainResolvers(...chain)
}
