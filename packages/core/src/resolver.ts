import type { KeySource } from './auth-level.js'
import { cachedPublicKey, DID_KEY_PREFIX } from './did-key.js'
import type { IdentityDocument } from './identity/document.js'
import type { AbortOptions } from './interfaces/storage.js'
import type { SignatureAlg } from './types.js'

/** What a verifier asks a {@link KeyResolver} for. */
export interface KeyLookup {
  /** The full key id; `agent` (the message's `from.agent`) and `fragment` are its parts. */
  keyId: string
  agent: string
  fragment: string
  /** The algorithm of the signature the key is needed for. */
  alg: SignatureAlg
}

/** A key a resolver found. */
export type ResolvedKey =
  | {
      alg: 'ed25519'
      publicKey: Uint8Array
      /** Where the key came from; decides the authentication level (PROFILE §5). */
      source: Exclude<KeySource, 'shared-secret'>
      /** The document listing the key: its retired/revoked rules apply (PROFILE §4). */
      document?: IdentityDocument
    }
  | {
      alg: 'hmac-sha256'
      secret: Uint8Array
      source: 'shared-secret'
      /** The one agent this token introduces (PROFILE §5). */
      peer?: string
      /** Binds an unbound token to `agent` once its signature verified; false: another took it. */
      bind?: (agent: string) => Promise<boolean>
    }

/** A resolver's answer: `not_found` is a verdict; `unavailable` is not (PROFILE §3, §4). */
export type KeyResolution =
  | { status: 'found'; key: ResolvedKey }
  | {
      status: 'not_found'
      reason: string
      /** Later resolvers in a chain are not asked (a fetched document, PROFILE §5). */
      final?: boolean
    }
  | {
      status: 'unavailable'
      reason: string
      /** Seconds. */
      retryAfter: number
      final?: boolean
    }

/** Finds the key behind a signature's key_id; applications may plug their own in. */
export interface KeyResolver {
  /** The key `lookup` names, or why there is none (for now). */
  resolve(lookup: KeyLookup, options?: AbortOptions): Promise<KeyResolution>
}

/** Ask resolvers in order: the first `found` or `final` wins, `unavailable` over `not_found`. */
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
      let publicKey: Uint8Array | undefined
      try {
        if (lookup.alg === 'ed25519') publicKey = cachedPublicKey(lookup.agent)
      } catch {}
      if (publicKey === undefined) return { status: 'not_found', reason: 'not a did:key' }
      const fragment = lookup.agent.slice(DID_KEY_PREFIX.length)
      if (lookup.fragment !== fragment) {
        return {
          status: 'not_found',
          reason: `${lookup.keyId}: a did:key has exactly one key, #${fragment}`,
        }
      }
      // A copy: the verdict hands the key to the caller.
      const key = { alg: 'ed25519', publicKey: publicKey.slice(), source: 'did-key' } as const
      return { status: 'found', key }
    },
  }
}
