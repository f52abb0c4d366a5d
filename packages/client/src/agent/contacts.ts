/**
 * Contacts: pinned keys (level 2 after comparing fingerprints out of band, PROFILE §5),
 * introduced keys, the relays they can be reached at, and the known-contact mark.
 */
import type { Storage } from '@agentmsg/core'
import {
  base64urlDecode,
  base64urlEncode,
  didKeyFragment,
  getDefaultCryptoProvider,
  isDidKey,
  parseAgentId,
} from '@agentmsg/core/http'
import type { PeerRelays } from './peers.js'
import type { ReceiveSide } from './receive.js'
import type { Contact, Contacts } from './types.js'

/**
 * A short human-comparable fingerprint of a public key: base32 (RFC 4648, lower case) of its
 * SHA-256, first 24 characters in groups of 4 (120 bits), e.g. `k3tq-…`.
 */
export async function fingerprint(publicKey: Uint8Array | string): Promise<string> {
  const bytes = typeof publicKey === 'string' ? base64urlDecode(publicKey, 'publicKey') : publicKey
  const digest = await getDefaultCryptoProvider().sha256(bytes)
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  const bits = [...digest.subarray(0, 15)].map((b) => b.toString(2).padStart(8, '0')).join('')
  const out = bits.replace(/.{5}/g, (five) => alphabet[Number.parseInt(five, 2)]!)
  return out.match(/.{4}/g)!.join('-')
}

export function createContacts(o: {
  storage: Storage
  /** The key store and auth levels live with the receive side (./receive.ts). */
  side: () => Promise<ReceiveSide>
  peers: PeerRelays
}): Contacts {
  return {
    async pin(agent, publicKey, options = {}) {
      const id = parseAgentId(agent, 'agent').id
      const bytes =
        typeof publicKey === 'string' ? base64urlDecode(publicKey, 'publicKey') : publicKey
      const keyId =
        options.keyId ?? (isDidKey(id) ? didKeyFragment(id) : base64urlEncode(bytes).slice(0, 8))
      const { keyStore, levels } = await o.side()
      await keyStore.pin(id, keyId, bytes)
      await levels.markKnownContact(id, 'pinned')
      if (options.relays?.length) await o.peers.remember(id, options.relays)
    },

    async list() {
      const byAgent = new Map<string, Contact>()
      const get = (agent: string) =>
        byAgent.get(agent) ??
        byAgent.set(agent, { agent, keys: [], relays: [], knownContact: false }).get(agent)!
      // Peer keys as `KeyStore` stores them.
      for (const [, value] of await o.storage.list('keys/peer/')) {
        const k = value as unknown as Record<'agent' | 'fragment' | 'publicKey', string> &
          Pick<Contact['keys'][number], 'source'>
        get(k.agent).keys.push({
          keyId: `${k.agent}#${k.fragment}`,
          source: k.source,
          fingerprint: await fingerprint(k.publicKey),
        })
      }
      for (const { agent, relays } of await o.peers.list()) get(agent).relays = relays
      const { levels } = await o.side()
      for (const c of byAgent.values()) c.knownContact = await levels.isKnownContact(c.agent)
      return [...byAgent.values()]
    },

    async remove(agent) {
      const { keyStore, levels } = await o.side()
      await keyStore.remove(agent)
      await levels.forgetContact(agent)
      await o.peers.forget(agent)
    },

    fingerprint,
  }
}
