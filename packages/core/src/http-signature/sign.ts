// Relay agent auth (PROFILE §9), signing: RFC 9421 in one shape, RFC 9530 `Content-Digest`. RFC
// 8941 values are written by hand: `structured-headers`' serializer cost a browser agent 2.6 KB.
import { getDefaultCryptoProvider } from '#crypto-default'
import { isAgentId, keyIdParts } from '../agent-id.js'
import { base64Encode, base64urlDecode, base64urlEncode } from '../base64url.js'
import { randomBytes, utf8Encode } from '../bytes.js'
import type { CryptoProvider } from '../crypto/provider.js'
import { didKeyFragment, isDidKey } from '../did-key.js'
import { invalidFormat } from '../errors.js'
import type { Signer } from '../keys.js'

export const SIGNATURE_LABEL = 'sig1'
/** Covered components with a body and without, and the parameters in writing order (§9). */
export const COMPONENTS_WITH_BODY = ['@method', '@target-uri', 'content-digest'] as const
export const COMPONENTS_WITHOUT_BODY = ['@method', '@target-uri'] as const
export const SIGNATURE_PARAMS = ['created', 'nonce', 'keyid', 'alg'] as const

const NONCE_RE = /^[A-Za-z0-9_-]{22,64}$/

export function sfString(value: string, field: string): string {
  if (typeof value !== 'string' || !/^[\x20-\x7e]*$/.test(value)) {
    throw invalidFormat('must be printable ASCII to fit an RFC 8941 string', field)
  }
  return value
}

/** An sf-string item (RFC 8941 §4.1.6) of a printable-ASCII value. */
export const sfQuoted = (value: string) => `"${value.replace(/[\\"]/g, '\\$&')}"`

export const sfBinary = (bytes: Uint8Array) => `:${base64Encode(bytes)}:`

/** The RFC 9530 `Content-Digest` of `body`: `sha-256=:<padded base64>:`. */
export async function contentDigest(body: Uint8Array, provider?: CryptoProvider): Promise<string> {
  return `sha-256=${sfBinary(await (provider ?? getDefaultCryptoProvider()).sha256(body))}`
}

/** The RFC 9421 §2.5 signature base of the profile's components; `digest` exactly when covered. */
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

/** PROFILE §9: a `nonce` is 22–64 characters of canonical base64url. */
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

/** PROFILE §3: a `keyid` is `<agent>#<fragment>`, the agent in normal form. */
export function checkKeyId(
  keyId: string,
  fail: (m: string) => Error,
): { agent: string; fragment: string } {
  if (typeof keyId !== 'string') throw fail('keyid must be a string')
  const parts = keyIdParts(keyId)
  if (!parts) throw fail('keyid must be <agent_id>#<fragment>')
  const { agent, fragment } = parts
  if (!isAgentId(agent)) {
    throw fail(`keyid's agent ${JSON.stringify(agent)} is not an agent id in normal form`)
  }
  if (isDidKey(agent) && fragment !== didKeyFragment(agent)) {
    throw fail("a did:key keyid's fragment is the DID's method-specific id")
  }
  return parts
}

/** Input of {@link signRequest}. */
export interface SignRequestInput {
  /** Upper-cased, as `fetch` sends the standard methods. */
  method: string
  /** The full URL as it will be sent, serialised, without a fragment. */
  url: string
  body?: Uint8Array
  signer: Signer
  /** Integer seconds since the epoch. @default now */
  created?: number
  /** @default base64url of 32 random bytes */
  nonce?: string
  provider?: CryptoProvider
}

/** Sign a relay request as an agent (PROFILE §9): the headers to add. */
export async function signRequest(input: SignRequestInput): Promise<Record<string, string>> {
  const { signer } = input
  if (signer.alg !== 'ed25519') {
    throw invalidFormat('relay auth signs with ed25519 only', 'signer.alg')
  }
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
  if (input.url.includes('#')) throw invalidFormat('must not have a fragment', 'url')
  const created = input.created ?? Math.floor(Date.now() / 1000)
  if (!Number.isSafeInteger(created) || created < 0 || created > 999_999_999_999_999) {
    throw invalidFormat('must be a non-negative integer number of seconds', 'created')
  }
  const nonce = input.nonce ?? base64urlEncode(randomBytes(32))
  checkNonce(nonce, (m) => invalidFormat(m, 'nonce'))
  const headers: Record<string, string> = {}
  let digest: string | undefined
  if (input.body !== undefined && input.body.length > 0) {
    digest = await contentDigest(input.body, input.provider)
    headers['Content-Digest'] = digest
  }
  const components = digest ? COMPONENTS_WITH_BODY : COMPONENTS_WITHOUT_BODY
  const params =
    `(${components.map(sfQuoted).join(' ')});created=${created}` +
    `;nonce=${sfQuoted(nonce)};keyid=${sfQuoted(keyId)};alg="ed25519"`
  const sig = await signer.sign(signatureBase(method, input.url, digest, params))
  headers['Signature-Input'] = `${SIGNATURE_LABEL}=${params}`
  headers['Signature'] = `${SIGNATURE_LABEL}=${sfBinary(sig)}`
  return headers
}

// WebSocket first-frame auth (PROFILE §9): the relay's challenge nonce, answered by a signature
// over `agentmsg-ws-auth`, the relay base URL and the nonce.
export const WS_AUTH_CONTEXT = 'agentmsg-ws-auth'

export interface WsChallengeFrame {
  type: 'challenge'
  nonce: string
}

/** The client's answer; `after`: resume after this cursor. */
export interface WsAuthFrame {
  type: 'auth'
  agent: string
  key_id: string
  sig: string
  after?: string
}

export function wsAuthPayload(relayBaseUrl: string, nonce: string): Uint8Array {
  return utf8Encode(`${WS_AUTH_CONTEXT}\n${relayBaseUrl}\n${nonce}`)
}

/** Input of {@link signWsAuth}. */
export interface SignWsAuthInput {
  /** As the relay has it configured. */
  relayBaseUrl: string
  nonce: string
  signer: Signer
  agent: string
  after?: string
}

/** Answer a relay's challenge. */
export async function signWsAuth(input: SignWsAuthInput): Promise<WsAuthFrame> {
  const { signer, agent } = input
  if (signer.alg !== 'ed25519') {
    throw invalidFormat('relay auth signs with ed25519 only', 'signer.alg')
  }
  if (typeof signer.keyId !== 'string' || keyIdParts(signer.keyId)?.agent !== agent) {
    throw invalidFormat(`key id ${signer.keyId} does not belong to ${agent}`, 'signer.keyId')
  }
  const sig = await signer.sign(wsAuthPayload(input.relayBaseUrl, input.nonce))
  const frame: WsAuthFrame = {
    type: 'auth',
    agent,
    key_id: signer.keyId,
    sig: base64urlEncode(sig),
  }
  if (input.after !== undefined) frame.after = input.after
  return frame
}
