/**
 * URL agents' identity documents (PROFILE §4), a chunk loaded the first time a URL agent is
 * involved: the agent's own (made, checked, kept in step with its relays, rotated, revoked),
 * peers' (./documents.ts), and those a level-0 greeting carries (PROFILE §5).
 */

import { generateKeyPair, type IdentityDocument, type KeyPair, parseAgentId } from '@agentmsg/core'
import { base64urlEncode } from '@agentmsg/core/http'
import {
  createIdentityDocument,
  revokeKey,
  rotateKey,
  validateIdentityDocument,
} from '@agentmsg/core/identity'

export { identityDocumentResolver } from '@agentmsg/core/identity'
export { introducedIdentity } from '@agentmsg/core/receive'

import type { SelfRecord } from './identity.js'
import type { AgentOptions } from './types.js'

/** The record of a new URL agent identity, its document made or checked. */
export function urlSelf(
  o: NonNullable<AgentOptions['identity']>,
  keys: KeyPair,
  relays: string[],
): SelfRecord {
  const { id, kind } = parseAgentId(o.agentId!, 'identity.agentId')
  if (kind !== 'url') throw new TypeError('identity.agentId must be a URL agent id (https://…)')
  const document = o.document
    ? validateIdentityDocument(o.document, { expectedAgentId: id })
    : createIdentityDocument({
        agentId: id,
        publicKey: keys.publicKey,
        ...(o.display ? { display: o.display } : {}),
        ...(relays.length ? { relays } : {}),
      })
  const pk = base64urlEncode(keys.publicKey)
  const active = document.keys.find((k) => k.status === 'active' && k.public_key === pk)
  if (!active) throw new TypeError("identity.document has no active key matching the seed's")
  return {
    agentId: id,
    active: active.key_id,
    seeds: { [active.key_id]: base64urlEncode(keys.secretKey) },
    document,
  }
}

/** `document` with `relay.urls` set to `relays` (the same object when nothing changes). */
export function withRelays(document: IdentityDocument, relays: string[]): IdentityDocument {
  const current = document.relay?.urls ?? []
  if (current.join('\n') === relays.join('\n')) return document
  const { relay: _relay, ...rest } = document
  return (
    relays.length ? { ...rest, relay: { urls: relays, preference: 'any' } } : rest
  ) as IdentityDocument
}

/** `self` with a new active key, the old one retired (PROFILE §4), and the new key. */
export async function rotated(
  self: SelfRecord,
  now: number,
): Promise<{ self: SelfRecord; keys: KeyPair }> {
  const keys = await generateKeyPair()
  const document = rotateKey(self.document!, { publicKey: keys.publicKey }, { now })
  const active = document.keys[document.keys.length - 1]!.key_id
  const seeds = { ...self.seeds, [active]: base64urlEncode(keys.secretKey) }
  return { self: { ...self, active, seeds, document }, keys }
}

/** `self` with the key `fragment` revoked and its seed forgotten. */
export function revoked(self: SelfRecord, fragment: string): SelfRecord {
  const { [fragment]: _revoked, ...seeds } = self.seeds
  return { ...self, seeds, document: revokeKey(self.document!, fragment) }
}
