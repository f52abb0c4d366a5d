/**
 * Key rotation and revocation (SPEC §3.1). Both return a new document and leave the input
 * untouched; a did:key identity refuses both, since its key is the identity (PROFILE §4).
 */
import { base64urlEncode } from '../base64url.js'
import { AgentMsgError, invalidFormat } from '../errors.js'
import { formatTimestamp } from '../timestamps.js'
import { defaultKeyId, requirePublicKey } from './create.js'
import type { IdentityDocument } from './document.js'
import { validateIdentityDocument } from './validate.js'

function refuseDidKey(doc: IdentityDocument, action: string): void {
  if (doc.agent_id.startsWith('did:key:')) {
    throw new AgentMsgError(
      'forbidden',
      `did:key identities cannot ${action}: the key is the identity; create a new did:key identity instead`,
    )
  }
}

/** Options for {@link rotateKey} and {@link revokeKey}. */
export interface KeyChangeOptions {
  /** Epoch ms used for `created` / `retired_date`. @default Date.now() */
  now?: number
}

/**
 * Rotate to a new key (SPEC §3.1): every active `ed25519` key becomes `retired` with
 * `retired_date` = now, and the new key is added as `active` with `created` = now. Returns a new
 * document; the input is not modified.
 *
 * @param next.keyId - bare fragment; defaults to the first 8 base64url characters of the key.
 * @throws AgentMsgError `forbidden` for a did:key document (rotation means a new identity);
 *   `invalid_format` for an invalid document, a duplicate key id or a key already listed.
 *
 * @example
 * const next = rotateKey(doc, { publicKey: newPublicKey, keyId: 'k2' })
 */
export function rotateKey(
  doc: IdentityDocument,
  next: { publicKey: Uint8Array; keyId?: string },
  options: KeyChangeOptions = {},
): IdentityDocument {
  refuseDidKey(doc, 'rotate keys')
  validateIdentityDocument(doc)
  const publicKey = requirePublicKey(next.publicKey, 'publicKey')
  const keyId = next.keyId ?? defaultKeyId(publicKey)
  if (typeof keyId !== 'string' || keyId === '' || keyId.includes('#')) {
    throw invalidFormat('must be a non-empty bare fragment (no #)', 'keyId')
  }
  if (doc.keys.some((k) => k.key_id === keyId)) {
    throw invalidFormat(`key id ${keyId} is already in the document`, 'keyId')
  }
  const encoded = base64urlEncode(publicKey)
  const reused = doc.keys.find((k) => k.type === 'ed25519' && k.public_key === encoded)
  // A retired or revoked key coming back as active would undo its retirement.
  if (reused)
    throw invalidFormat(`this public key is already listed as ${reused.key_id}`, 'publicKey')

  const now = formatTimestamp(options.now ?? Date.now())
  const out = structuredClone(doc)
  for (const key of out.keys) {
    if (key.type === 'ed25519' && key.status === 'active') {
      key.status = 'retired'
      key.retired_date = now
    }
  }
  out.keys.push({
    key_id: keyId,
    type: 'ed25519',
    public_key: encoded,
    created: now,
    status: 'active',
  })
  return out
}

/**
 * Revoke a key, e.g. one that may be compromised (SPEC §3.1): it stops verifying at once,
 * without a transition period. A `retired_date` it had is kept. Returns a new document.
 *
 * @param options - accepted for symmetry with {@link rotateKey}; SPEC §2.3 defines no
 *   revocation date, so nothing is stamped.
 * @throws AgentMsgError `forbidden` for a did:key document, `not_found` for an unknown key id.
 *
 * @example
 * const safe = revokeKey(doc, 'k1')
 */
export function revokeKey(
  doc: IdentityDocument,
  keyId: string,
  options: KeyChangeOptions = {},
): IdentityDocument {
  void options
  refuseDidKey(doc, 'revoke keys')
  const out = structuredClone(doc)
  const key = out.keys.find((k) => k.key_id === keyId)
  if (!key)
    throw new AgentMsgError(
      'not_found',
      `no key ${keyId} in the identity document of ${doc.agent_id}`,
    )
  key.status = 'revoked'
  return out
}
