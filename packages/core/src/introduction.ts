import { constantTimeEqual } from './bytes.js'
import { isDidKey, publicKeyFromDidKey } from './did-key.js'
import { invalidFormat } from './errors.js'
import type { IdentityDocument } from './identity/document.js'
import { publicKeyOf, validateIdentityDocument } from './identity/document.js'
import type { Message } from './types.js'

/** The identity document a verified level-0 greeting carries (`{identity}`), if any and valid. */
export function introducedIdentity(message: Message): IdentityDocument | undefined {
  if (message.phase !== 'greeting') return undefined
  for (const part of message.body.parts) {
    if (part.type !== 'data' || typeof part.data !== 'object' || part.data === null) continue
    const data = part.data as Record<string, unknown>
    if (!('identity' in data)) continue
    const doc = validateIdentityDocument(data.identity, { expectedAgentId: message.from.agent })
    if (isDidKey(doc.agent_id)) {
      const didKey = publicKeyFromDidKey(doc.agent_id)
      if (!doc.keys.every((k) => constantTimeEqual(publicKeyOf(k), didKey))) {
        throw invalidFormat(
          "a did:key agent's introduced key must be the DID's key",
          'body.parts.data.identity',
        )
      }
    }
    return doc
  }
  return undefined
}
