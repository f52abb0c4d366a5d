/**
 * The one RFC 9421 shape relay agent auth uses (PROFILE §9): its constants, the signature base,
 * the RFC 9530 `Content-Digest`, and the checks on `nonce` and `keyid` that signing and
 * verifying share.
 */

import { getDefaultCryptoProvider } from '#crypto-default'
import { isAgentId } from '../agent-id.js'
import { base64urlDecode, base64urlEncode } from '../base64url.js'
import { randomBytes, utf8Encode } from '../bytes.js'
import type { CryptoProvider } from '../crypto/provider.js'
import { didKeyFragment, isDidKey } from '../did-key.js'
import { sfBinary } from './sf-write.js'

/** The only signature label this profile uses (PROFILE §9). */
export const SIGNATURE_LABEL = 'sig1'
/** How far `created` may be from the verifier's clock, either way (PROFILE §9). */
export const MAX_CREATED_SKEW_MS = 5 * 60_000
/** How long a (keyid, nonce) pair is remembered (PROFILE §9). */
export const NONCE_RETENTION_MS = 10 * 60_000

/** Covered components of a request with a body, in this order (PROFILE §9). */
export const COMPONENTS_WITH_BODY = ['@method', '@target-uri', 'content-digest'] as const
/** Covered components of a request without a body (PROFILE §9). */
export const COMPONENTS_WITHOUT_BODY = ['@method', '@target-uri'] as const
/** The signature parameters, in the order our signer writes them (PROFILE §9). */
export const SIGNATURE_PARAMS = ['created', 'nonce', 'keyid', 'alg'] as const

const NONCE_RE = /^[A-Za-z0-9_-]{22,64}$/

/**
 * The RFC 9530 `Content-Digest` value of `body`: `sha-256=:<padded base64>:`.
 *
 * @example
 * await contentDigest(utf8Encode('{"hello": "world"}'))
 * // 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:'
 */
export async function contentDigest(body: Uint8Array, provider?: CryptoProvider): Promise<string> {
  const digest = await (provider ?? getDefaultCryptoProvider()).sha256(body)
  return `sha-256=${sfBinary(digest)}`
}

/**
 * The RFC 9421 §2.5 signature base for this profile's components: a line
 * `"<component>": <value>` per covered component, then `"@signature-params": <value>`, joined by
 * LF with no trailing LF. `signatureParams` is the serialised inner list with its parameters
 * (`("@method" …);created=…;…`); `digest` is the `Content-Digest` field value, given exactly when
 * it is covered.
 */
export function signatureBase(
  method: string,
  targetUri: string,
  digest: string | undefined,
  signatureParams: string,
): Uint8Array {
  const lines = [`"@method": ${method}`, `"@target-uri": ${targetUri}`]
  if (digest !== undefined) lines.push(`"content-digest": ${digest}`)
  lines.push(`"@signature-params": ${signatureParams}`)
  return utf8Encode(lines.join('\n'))
}

/** A fresh request nonce: base64url of 32 random bytes (43 characters). */
export function createRequestNonce(): string {
  return base64urlEncode(randomBytes(32))
}

/** A `nonce` as PROFILE §9: 22–64 characters of canonical base64url. */
export function checkNonce(nonce: string, fail: (m: string) => Error): void {
  if (typeof nonce !== 'string' || !NONCE_RE.test(nonce)) {
    throw fail('nonce must be 22–64 base64url characters')
  }
  try {
    base64urlDecode(nonce)
  } catch {
    throw fail('nonce must be canonical base64url')
  }
}

/** A `keyid` as PROFILE §3: `<agent>#<fragment>` split at the last `#`, agent in normal form. */
export function checkKeyId(
  keyId: string,
  fail: (m: string) => Error,
): { agent: string; fragment: string } {
  if (typeof keyId !== 'string') throw fail('keyid must be a string')
  const hash = keyId.lastIndexOf('#')
  const agent = keyId.slice(0, hash)
  const fragment = keyId.slice(hash + 1)
  if (hash <= 0 || fragment === '') throw fail('keyid must be <agent_id>#<fragment>')
  if (!isAgentId(agent))
    throw fail(`keyid's agent ${JSON.stringify(agent)} is not an agent id in normal form`)
  if (isDidKey(agent) && fragment !== didKeyFragment(agent)) {
    throw fail("a did:key keyid's fragment is the DID's method-specific id")
  }
  return { agent, fragment }
}
