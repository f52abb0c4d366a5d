/** The identity fetcher an agent on Node uses: createIdentityFetcher over createNodeFetch. */
import { createIdentityFetcher, type IdentityFetcherOptions } from '../src/identity-fetcher.js'
import { createNodeFetch, type NodeFetchOptions } from '../src/node-fetch.js'

export function createNodeIdentityFetcher(
  options: Omit<NodeFetchOptions, 'timeoutMs'> & Omit<IdentityFetcherOptions, 'fetch'> = {},
) {
  const { timeoutMs, maxBytes, maxRedirects, ...fetchOptions } = options
  const fetch = createNodeFetch(fetchOptions)
  return createIdentityFetcher({ fetch, timeoutMs, maxBytes, maxRedirects })
}
