/** Signing a relay request as an agent: RFC 9421 restricted to PROFILE §9's one shape. */
import type { CryptoProvider } from '../crypto/provider.js'
import { invalidFormat } from '../errors.js'
import type { Signer } from '../keys.js'
import {
  COMPONENTS_WITH_BODY,
  COMPONENTS_WITHOUT_BODY,
  checkKeyId,
  checkNonce,
  contentDigest,
  createRequestNonce,
  SIGNATURE_LABEL,
  signatureBase,
} from './components.js'
import { sfBinary, sfQuoted, sfString } from './sf-write.js'

/** Input of {@link signRequest}. */
export interface SignRequestInput {
  /** The HTTP method; written upper-case, as `fetch` sends the standard methods. */
  method: string
  /**
   * The full URL exactly as it will be sent: the relay base URL + path + query. It must be in
   * WHATWG serialised form (what `fetch` puts on the wire), without a fragment.
   */
  url: string
  /** The request body; a `Content-Digest` is added and covered when it is non-empty. */
  body?: Uint8Array
  /** An Ed25519 signer whose `keyId` names the agent the request acts for. */
  signer: Signer
  /** Creation time, integer seconds since the epoch. @default now */
  created?: number
  /** base64url, 22–64 characters. @default 32 random bytes */
  nonce?: string
  /** The crypto provider for the digest. @default the platform's */
  provider?: CryptoProvider
}

/**
 * Sign a relay request as an agent (PROFILE §9). Returns the headers to add:
 * `Signature-Input`, `Signature`, and `Content-Digest` when there is a body. The parameters are
 * written in PROFILE §9's order (created, nonce, keyid, alg), and `@signature-params` is the
 * RFC 8941 serialisation of the `Signature-Input` member, the same text the header carries.
 *
 * An empty body counts as no body: it gets no `Content-Digest`, and the verifier, receiving
 * zero bytes, expects none.
 *
 * @throws AgentMsgError `invalid_format` for a non-Ed25519 signer, a URL not in serialised form,
 *   a malformed nonce, created or key id.
 *
 * @example
 * const headers = await signRequest({
 *   method: 'GET',
 *   url: 'https://relay.example/relay/messages?agent=did%3Akey%3Az6Mk…',
 *   signer: ed25519Signer(keys),
 * })
 */
export async function signRequest(input: SignRequestInput): Promise<Record<string, string>> {
  const { signer } = input
  if (signer.alg !== 'ed25519')
    throw invalidFormat('relay auth signs with ed25519 only', 'signer.alg')
  checkKeyId(signer.keyId, (m) => invalidFormat(m, 'signer.keyId'))
  const keyId = sfString(signer.keyId, 'signer.keyId')
  const method = input.method.toUpperCase()
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Z]+$/.test(method))
    throw invalidFormat('not an HTTP method token', 'method')
  let parsed: URL
  try {
    parsed = new URL(input.url)
  } catch {
    throw invalidFormat('must be an absolute URL', 'url')
  }
  if (parsed.href !== input.url) {
    throw invalidFormat(`must be in serialised form, as it is sent (${parsed.href})`, 'url')
  }
  if (parsed.hash !== '' || input.url.includes('#'))
    throw invalidFormat('must not have a fragment', 'url')
  const created = input.created ?? Math.floor(Date.now() / 1000)
  if (!Number.isSafeInteger(created) || created < 0 || created > 999_999_999_999_999) {
    throw invalidFormat('must be a non-negative integer number of seconds', 'created')
  }
  const nonce = input.nonce ?? createRequestNonce()
  checkNonce(nonce, (m) => invalidFormat(m, 'nonce'))

  const hasBody = input.body !== undefined && input.body.length > 0
  const headers: Record<string, string> = {}
  let digest: string | undefined
  if (hasBody) {
    digest = await contentDigest(input.body!, input.provider)
    headers['Content-Digest'] = digest
  }
  const components = hasBody ? COMPONENTS_WITH_BODY : COMPONENTS_WITHOUT_BODY
  // The Signature-Input member, spelled as RFC 8941 serialises it: the covered components as an
  // inner list of strings, then the parameters in PROFILE §9's order. `@signature-params` is
  // this same text (RFC 9421 §2.3).
  const params =
    `(${components.map(sfQuoted).join(' ')});created=${created}` +
    `;nonce=${sfQuoted(nonce)};keyid=${sfQuoted(keyId)};alg="ed25519"`
  const sig = await signer.sign(signatureBase(method, input.url, digest, params))
  headers['Signature-Input'] = `${SIGNATURE_LABEL}=${params}`
  headers['Signature'] = `${SIGNATURE_LABEL}=${sfBinary(sig)}`
  return headers
}
