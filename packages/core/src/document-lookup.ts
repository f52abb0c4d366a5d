// Its own module: an agent loads it up front (its lazy document wrapper asks it first), while the
// resolvers beside which it would otherwise live load with the receive side.
import { parseAgentId } from './agent-id.js'
import type { KeyLookup, KeyResolution } from './resolver.js'

/** `not_found` for a lookup no identity document serves (PROFILE §4), without the cache. */
export function nonDocumentLookup(lookup: KeyLookup): KeyResolution | undefined {
  if (lookup.alg !== 'ed25519') {
    return { status: 'not_found', reason: 'identity documents hold Ed25519 keys only' }
  }
  let kind: string
  try {
    kind = parseAgentId(lookup.agent).kind
  } catch {
    return { status: 'not_found', reason: 'not an agent id' }
  }
  return kind === 'url' ? undefined : { status: 'not_found', reason: 'not a URL agent' }
}
