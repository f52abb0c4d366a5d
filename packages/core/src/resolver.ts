import type { KeySource } from './auth-level.js'
import type { IdentityDocument } from './identity.js'
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
    }

/**
 * A resolver's answer. `not_found` is a verdict (401 `unknown_sender` when nothing else
 * verifies); `unavailable` is not (503 `unavailable` with `Retry-After`, PROFILE §3/§4).
 */
export type KeyResolution =
  | { status: 'found'; key: ResolvedKey }
  | { status: 'not_found'; reason: string }
  | { status: 'unavailable'; reason: string; /** seconds */ retryAfter: number }

/**
 * Finds the key behind a signature's key_id. Transports and applications plug their own in
 * (an identity-document fetcher with a network policy, a contacts database, …).
 */
export interface KeyResolver {
  resolve(lookup: KeyLookup, options?: AbortOptions): Promise<KeyResolution>
}

/**
 * Ask resolvers in order (PROFILE §4: cache → identity document → did:key → out-of-band pins);
 * the first `found` wins. When none finds the key, any `unavailable` answer wins over
 * `not_found`, so a transient failure never becomes a verdict.
 */
export function chainResolvers(...resolvers: KeyResolver[]): KeyResolver {
  return {
    async resolve(lookup, options) {
      let unavailable: Extract<KeyResolution, { status: 'unavailable' }> | undefined
      const reasons: string[] = []
      for (const r of resolvers) {
        const res = await r.resolve(lookup, options)
        if (res.status === 'found') return res
        if (res.status === 'unavailable') {
          if (!unavailable || res.retryAfter > unavailable.retryAfter) unavailable = res
        } else reasons.push(res.reason)
      }
      return unavailable ?? { status: 'not_found', reason: reasons.join('; ') || `no key for ${lookup.keyId}` }
    },
  }
}
