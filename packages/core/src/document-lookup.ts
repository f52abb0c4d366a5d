/**
 * Which key lookups an identity document can answer (PROFILE §4): Ed25519 keys of URL agents.
 * The document cache answers every other lookup at once; a wrapper that loads the cache lazily
 * (the client's) gives the same answers without loading it.
 */
import { parseAgentId } from './agent-id.js'
import type { KeyLookup, KeyResolution } from './resolver.js'

/** The `not_found` answer to a lookup no identity document can serve, or undefined. */
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
