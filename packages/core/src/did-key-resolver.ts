/**
 * The did:key resolver (PROFILE §4): the key is in the identifier. Its own file, apart from the
 * identity-document resolver, so a receiver that only meets did:key agents loads no identity
 * document code.
 */
import { didKeyFragment, isDidKey, publicKeyFromDidKey } from './did-key.js'
import type { KeyResolver } from './resolver.js'

/** Resolves Ed25519 keys of did:key agents from the identifier itself (level 3). */
export function didKeyResolver(): KeyResolver {
  return {
    async resolve(lookup) {
      if (lookup.alg !== 'ed25519' || !isDidKey(lookup.agent)) {
        return { status: 'not_found', reason: 'not a did:key' }
      }
      if (lookup.fragment !== didKeyFragment(lookup.agent)) {
        return {
          status: 'not_found',
          reason: `${lookup.keyId}: a did:key has exactly one key, #${didKeyFragment(lookup.agent)}`,
        }
      }
      return {
        status: 'found',
        key: { alg: 'ed25519', publicKey: publicKeyFromDidKey(lookup.agent), source: 'did-key' },
      }
    },
  }
}
