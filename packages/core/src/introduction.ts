import { getDefaultCryptoProvider } from '#crypto-default'
import { base64urlDecode, base64urlEncode } from './base64url.js'
import { constantTimeEqual, randomBytes } from './bytes.js'
import type { CryptoProvider } from './crypto/provider.js'
import { isDidKey, publicKeyFromDidKey } from './did-key.js'
import { invalidFormat } from './errors.js'
import { type IdentityDocument, publicKeyOf, validateIdentityDocument } from './identity.js'
import type { Signer } from './keys.js'
import type { Message } from './types.js'

/**
 * A new introduction token: base64url of 32 random bytes, to give to both humans (PROFILE §5).
 *
 * @example
 * const token = createIntroductionToken() // share it out of band
 */
export function createIntroductionToken(): string {
  return base64urlEncode(randomBytes(32))
}

/** The key_id fragment of an introduction secret: `intro-` + 16 chars of base64url(SHA-256). */
export async function introductionFragment(
  secret: Uint8Array,
  provider?: CryptoProvider,
): Promise<string> {
  const digest = await (provider ?? getDefaultCryptoProvider()).sha256(secret)
  return 'intro-' + base64urlEncode(digest).slice(0, 16)
}

/**
 * A level-0 {@link Signer} (`hmac-sha256`) for an introduction token, signing as `agentId`.
 *
 * @example
 * const signed = await signMessage(greeting, [ed25519Signer(keys), await hmacSigner(token, myId)])
 */
export async function hmacSigner(
  token: string,
  agentId: string,
  provider?: CryptoProvider,
): Promise<Signer> {
  const secret = base64urlDecode(token, 'token')
  if (secret.length !== 32) throw invalidFormat('an introduction token is 32 bytes', 'token')
  const p = provider ?? getDefaultCryptoProvider()
  return {
    alg: 'hmac-sha256',
    keyId: `${agentId}#${await introductionFragment(secret, p)}`,
    sign: (data) => p.hmacSha256(secret, data),
  }
}

/**
 * The identity document a level-0 greeting carries in a data part `{identity: {...}}`, if it
 * is acceptable: a valid document whose agent_id is the sender's (and, for a did:key sender,
 * whose key is the DID's key). Returns `undefined` when the message carries none; throws
 * `invalid_format` when it carries one that must be refused. Call it only on a verified
 * message.
 */
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
