/**
 * URL agents' identity documents (PROFILE §4), a chunk of its own: the agent's own (made or
 * checked when the identity is created, kept in step with the configured relays, rotated and
 * revoked), peers' (fetched and cached, ./documents.ts), and those a level-0 greeting carries
 * (PROFILE §5). Imported the first time a URL agent is involved: a did:key browser agent that
 * meets only did:key agents never loads it.
 */

import { type IdentityDocument, type KeyPair, parseAgentId } from '@agentmsg/core'
import { createIdentityDocument, validateIdentityDocument } from '@agentmsg/core/identity'

export { identityDocumentResolver, revokeKey, rotateKey } from '@agentmsg/core/identity'
export { introducedIdentity } from '@agentmsg/core/receive'

import { base64urlEncode } from '@agentmsg/core/http'
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
