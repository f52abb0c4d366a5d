import { parseAgentId } from './agent-id.js'
import type { KeySource } from './auth-level.js'
import { didKeyFragment, isDidKey, publicKeyFromDidKey } from './did-key.js'
import type { IdentityDocument } from './identity/document.js'
import type { AbortOptions } from './interfaces/abort.js'
import type { SignatureAlg } from './types.js'

/** What a verifier asks a {@link KeyResolver} for. */
export interface KeyLookup {
  /** The full key id `<agent_id>#<fragment>`. */
  keyId: string
  /** The agent part of the key id (equal to the message's `from.agent`). */
  agent: string
  /** The fragment after the last `#`. */
  fragment: string
  /** The algorithm of the signature the key is needed for. */
  alg: SignatureAlg
}

/** A key a resolver found. */
export type ResolvedKey =
  | {
      alg: 'ed25519'
      /** The 32-byte public key. */
      publicKey: Uint8Array
      /** Where the key came from; decides the authentication level (PROFILE §5). */
      source: Exclude<KeySource, 'shared-secret'>
      /**
       * The identity document that lists the key, when it came from one: the verifier then
       * applies the retired/revoked rules of PROFILE §4 to the signature's `created` time.
       */
      document?: IdentityDocument
    }
  | {
      alg: 'hmac-sha256'
      /** The shared secret (the decoded introduction token). */
      secret: Uint8Array
      source: 'shared-secret'
      /**
       * The one agent this token introduces (PROFILE §5): a signature by anyone else made
       * with it is a failing signature.
       */
      peer?: string
      /**
       * For a token not yet bound to a peer: bind it to `agent`, called by the verifier once
       * the signature verified. Resolves false when another peer took it meanwhile, which
       * makes the signature a failing one.
       */
      bind?: (agent: string) => Promise<boolean>
    }

/**
 * A resolver's answer. `not_found` is a verdict (401 `unknown_sender` when nothing else
 * verifies); `unavailable` is not (503 `unavailable` with `Retry-After`, PROFILE §3/§4).
 */
export type KeyResolution =
  | { status: 'found'; key: ResolvedKey }
  | {
      status: 'not_found'
      reason: string
      /** The answer stands: resolvers later in a chain are not asked (a fetched document, §5). */
      final?: boolean
    }
  | {
      status: 'unavailable'
      reason: string
      /** seconds */
      retryAfter: number
      /** As for `not_found`: later resolvers are not asked. */
      final?: boolean
    }

/**
 * Finds the key behind a signature's key_id. Transports and applications plug their own in
 * (an identity-document fetcher with a network policy, a contacts database, …).
 */
export interface KeyResolver {
  resolve(lookup: KeyLookup, options?: AbortOptions): Promise<KeyResolution>
}

/**
 * Ask resolvers in order (PROFILE §4: cache → identity document → did:key → out-of-band pins);
 * the first `found` wins, and a `final` answer ends the search (a URL agent's fetched identity
 * document: a key it does not list is not found, whatever was pinned or introduced, §5). When
 * none finds the key, any `unavailable` answer wins over `not_found`, so a transient failure
 * never becomes a verdict.
 */
export function chainResolvers(...resolvers: KeyResolver[]): KeyResolver {
  return {
    async resolve(lookup, options) {
      let unavailable: Extract<KeyResolution, { status: 'unavailable' }> | undefined
      const reasons: string[] = []
      for (const r of resolvers) {
        const res = await r.resolve(lookup, options)
        if (res.status === 'found' || res.final) return res
        if (res.status === 'unavailable') {
          if (!unavailable || res.retryAfter > unavailable.retryAfter) unavailable = res
        } else reasons.push(res.reason)
      }
      return (
        unavailable ?? {
          status: 'not_found',
          reason: reasons.join('; ') || `no key for ${lookup.keyId}`,
        }
      )
    },
  }
}

/** Resolves Ed25519 keys of did:key agents from the identifier itself (level 3, PROFILE §4). */
export function didKeyResolver(): KeyResolver {
  return {
    async resolve(lookup) {
      if (lookup.alg !== 'ed25519' || !isDidKey(lookup.agent)) {
        return { status: 'not_found', reason: 'not a did:key' }
      }
      const fragment = didKeyFragment(lookup.agent)
      if (lookup.fragment !== fragment) {
        return {
          status: 'not_found',
          reason: `${lookup.keyId}: a did:key has exactly one key, #${fragment}`,
        }
      }
      return {
        status: 'found',
        key: { alg: 'ed25519', publicKey: publicKeyFromDidKey(lookup.agent), source: 'did-key' },
      }
    },
  }
}

/**
 * The `not_found` answer to a lookup no identity document can serve (PROFILE §4: documents hold
 * Ed25519 keys of URL agents), or undefined. A wrapper that loads the document cache lazily
 * gives the cache's answers without loading it.
 */
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
