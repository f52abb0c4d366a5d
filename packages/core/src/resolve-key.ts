import { AgentMsgError } from './errors.js'
import { checkKeyUsable } from './identity/key-usability.js'
import type { AbortOptions } from './interfaces/abort.js'
import type { KeyLookup, KeyResolver, ResolvedKey } from './resolver.js'

/** An Ed25519 key a resolver found. */
export type ResolvedEd25519Key = Extract<ResolvedKey, { alg: 'ed25519' }>

/** Options for {@link resolveEd25519Key}. */
export interface ResolveEd25519KeyOptions extends AbortOptions {
  /** When the signature was made (ms): checked against a retired key's bounds (PROFILE §4). */
  created: number
  /** The current time (ms). */
  now: number
  /** Transition period of retired keys. @default 14 days */
  transitionMs?: number
  /** The field named in errors, e.g. `key_id`. */
  field?: string
}

/**
 * Look up the Ed25519 key of a single signature (relay agent auth, the WebSocket challenge) and
 * turn the answer into a verdict: `unavailable` (503, with `retryAfter`) when the lookup failed
 * for now, `unknown_sender` when no key exists, `key_revoked` for a revoked key or a retired one
 * outside its bounds. Message verification, which weighs several signatures, has its own rules
 * (PROFILE §3) and does not use this.
 */
export async function resolveEd25519Key(
  resolver: KeyResolver,
  lookup: Omit<KeyLookup, 'alg'>,
  options: ResolveEd25519KeyOptions,
): Promise<ResolvedEd25519Key> {
  const field = options.field === undefined ? {} : { field: options.field }
  const res = await resolver.resolve(
    { ...lookup, alg: 'ed25519' },
    options.signal ? { signal: options.signal } : {},
  )
  if (res.status === 'unavailable') {
    throw new AgentMsgError(
      'unavailable',
      `the signing key could not be looked up now: ${res.reason}`,
      {
        retryAfter: Math.max(1, res.retryAfter),
        ...field,
      },
    )
  }
  if (res.status === 'not_found') {
    throw new AgentMsgError(
      'unknown_sender',
      `no key found for ${lookup.keyId}: ${res.reason}`,
      field,
    )
  }
  const key = res.key
  if (key.alg !== 'ed25519') {
    throw new AgentMsgError(
      'internal_error',
      `resolver returned a ${key.alg} key for an ed25519 signature`,
    )
  }
  if (key.document) {
    const use = checkKeyUsable(
      key.document,
      lookup.fragment,
      options.created,
      options.now,
      options.transitionMs === undefined ? {} : { transitionMs: options.transitionMs },
    )
    if (!use.ok) throw new AgentMsgError(use.code, use.message, field)
  }
  return key
}
