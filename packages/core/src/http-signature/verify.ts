/** Authenticating a relay request (PROFILE §9 agent auth, RFC 9421). */
import {
  type Dictionary,
  type InnerList,
  type Item,
  parseDictionary,
  serializeDictionary,
  serializeInnerList,
} from 'structured-headers'
import { getDefaultCryptoProvider } from '#crypto-default'
import { type KeySource, levelForKeySource } from '../auth-level.js'
import { constantTimeEqual } from '../bytes.js'
import type { CryptoProvider } from '../crypto/provider.js'
import { AgentMsgError } from '../errors.js'
import { resolveEd25519Key } from '../identity/key-usability.js'
import { PROFILE } from '../profile.js'
import type { KeyResolver } from '../resolver.js'
import type { AuthLevel } from '../types.js'
import type { NonceMemory } from './nonces.js'
import {
  COMPONENTS_WITH_BODY,
  COMPONENTS_WITHOUT_BODY,
  checkKeyId,
  checkNonce,
  SIGNATURE_LABEL,
  SIGNATURE_PARAMS,
  signatureBase,
} from './sign.js'

const ED25519_SIG_BYTES = 64

/** Input of {@link verifyRequest}. */
export interface VerifyRequestInput {
  method: string
  /** The relay base URL + the request target as received (never built from `Host`). */
  targetUri: string
  headers: Headers | Record<string, string>
  body?: Uint8Array
  resolver: KeyResolver
  nonces: NonceMemory
  bucket?: string
  /** A nonce memory shared by relay processes, asked after `nonces` (PROFILE §9). */
  sharedNonces?: (keyId: string, nonce: string, expiresAt: number) => Promise<'fresh' | 'replay'>
  expectedAgent?: string
  now?: number
  transitionMs?: number
  provider?: CryptoProvider
}

export interface VerifiedRequest {
  agent: string
  keyId: string
  source: KeySource
  level: AuthLevel
}

const invalid = (message: string) => new AgentMsgError('invalid_signature', message)

/** A header's value, trimmed, several joined with `", "` (RFC 9110 §5.3). */
function getHeader(headers: Headers | Record<string, string>, name: string): string | undefined {
  const trim = (v: string) => v.replace(/^[ \t]+|[ \t]+$/g, '')
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const value = (headers as Headers).get(name)
    return value === null ? undefined : trim(value)
  }
  const values = Object.entries(headers as Record<string, string>)
    .filter(([k, v]) => k.toLowerCase() === name && typeof v === 'string')
    .map(([, v]) => trim(v))
  return values.length === 0 ? undefined : values.join(', ')
}

const withoutWhitespace = (text: string) => text.replace(/[ \t]/g, '')

// An RFC 8941 dictionary whose text is the serialisation of what was parsed but for optional
// whitespace: parsing is lossy where PROFILE §9 is strict (repeated keys, `1.0`, lenient bytes).
function parseField(text: string, name: string): Dictionary {
  const fail = (why: string) => invalid(`${name} is not a structured-field dictionary: ${why}`)
  let parsed: Dictionary
  let canonical: string
  try {
    parsed = parseDictionary(text)
  } catch (e) {
    throw fail((e as Error).message)
  }
  try {
    canonical = serializeDictionary(parsed)
  } catch (e) {
    throw fail(`holds a value that cannot be written back: ${(e as Error).message}`)
  }
  if (withoutWhitespace(text) !== withoutWhitespace(canonical)) {
    throw fail(
      'differs from its RFC 8941 serialisation in more than optional whitespace (a repeated key or parameter, or a non-canonical number or byte sequence)',
    )
  }
  return parsed
}

const isInnerList = (value: Item | InnerList): value is InnerList => Array.isArray(value[0])
const isBytes = (v: Item | InnerList | undefined): v is [ArrayBuffer, Item[1]] =>
  v !== undefined && !isInnerList(v) && v[0] instanceof ArrayBuffer && v[1].size === 0

function onlyMember(dict: Dictionary): Item | InnerList {
  if (dict.size !== 1) throw invalid('exactly one signature is allowed')
  const [label, value] = [...dict][0]!
  if (label !== SIGNATURE_LABEL) throw invalid(`the signature label must be ${SIGNATURE_LABEL}`)
  return value
}

const sameList = (got: unknown[], want: readonly string[]) =>
  got.length === want.length && got.every((v, i) => v === want[i])

function readSignatureInput(text: string, hasBody: boolean) {
  const value = onlyMember(parseField(text, 'Signature-Input'))
  if (!isInnerList(value)) throw invalid('the Signature-Input value must be an inner list')
  const list: InnerList = value
  const [items, params] = list
  if (items.some(([c, p]) => typeof c !== 'string' || p.size > 0)) {
    throw invalid('covered components must be plain strings')
  }
  const want = hasBody ? COMPONENTS_WITH_BODY : COMPONENTS_WITHOUT_BODY
  const components = items.map(([c]) => c)
  if (!sameList(components, want)) {
    throw invalid(
      `covered components must be (${want.map((c) => `"${c}"`).join(' ')})${hasBody ? '' : ' for a request without a body'}`,
    )
  }
  // Any order, as RFC 9421 allows (PROFILE §9); repeats were refused when parsing.
  if (params.size !== SIGNATURE_PARAMS.length || SIGNATURE_PARAMS.some((k) => !params.has(k))) {
    throw invalid('signature parameters must be exactly created, nonce, keyid and alg')
  }
  const created = params.get('created')
  const nonce = params.get('nonce') as string
  const keyid = params.get('keyid') as string
  if (typeof created !== 'number' || !Number.isInteger(created) || created < 0)
    throw invalid('created must be a non-negative integer')
  checkNonce(nonce, invalid)
  const { agent, fragment } = checkKeyId(keyid, invalid)
  if (params.get('alg') !== 'ed25519') throw invalid('alg must be "ed25519"')
  // RFC 9421 §2.3: `@signature-params` is the serialisation of what was parsed, in the order
  // received, so optional RFC 8941 spaces verify (PROFILE §9).
  return { created, nonce, keyid, agent, fragment, signatureParams: serializeInnerList(list) }
}

function readSignature(text: string): Uint8Array {
  const value = onlyMember(parseField(text, 'Signature'))
  if (!isBytes(value)) throw invalid('Signature must be a byte sequence without parameters')
  const sig = new Uint8Array(value[0])
  if (sig.length !== ED25519_SIG_BYTES)
    throw invalid(`an ed25519 signature is ${ED25519_SIG_BYTES} bytes`)
  return sig
}

async function checkContentDigest(
  text: string | undefined,
  body: Uint8Array,
  provider: CryptoProvider,
): Promise<string> {
  if (text === undefined) throw invalid('a request with a body needs a Content-Digest')
  const dict = parseField(text, 'Content-Digest')
  const sha = dict.get('sha-256')
  if (dict.size !== 1 || !isBytes(sha)) throw invalid('Content-Digest must be sha-256=:<base64>:')
  if (!constantTimeEqual(new Uint8Array(sha[0]), await provider.sha256(body))) {
    throw invalid('Content-Digest does not match the body')
  }
  return text
}

/**
 * Authenticate a relay request (PROFILE §9). Nonces are remembered only for verified signatures;
 * ownership is checked last, so 403 is told only to a caller who proved who they are.
 */
export async function verifyRequest(input: VerifyRequestInput): Promise<VerifiedRequest> {
  const now = input.now ?? Date.now()
  const provider = input.provider ?? getDefaultCryptoProvider()
  const sigInputText = getHeader(input.headers, 'signature-input')
  const sigText = getHeader(input.headers, 'signature')
  if (sigInputText === undefined || sigText === undefined) {
    throw new AgentMsgError(
      'unauthorized',
      'agent auth required: Signature and Signature-Input headers (RFC 9421)',
    )
  }
  const hasBody = input.body !== undefined && input.body.length > 0
  const params = readSignatureInput(sigInputText, hasBody)
  const sig = readSignature(sigText)

  const createdMs = params.created * 1000
  if (Math.abs(createdMs - now) > PROFILE.clockSkewMs) {
    throw invalid(
      `created is more than ${PROFILE.clockSkewMs / 60_000} minutes away from the relay clock`,
    )
  }
  const digest = hasBody
    ? await checkContentDigest(getHeader(input.headers, 'content-digest'), input.body!, provider)
    : undefined

  const { keyid: keyId, agent, fragment, nonce } = params
  const { transitionMs } = input
  const options = { created: createdMs, now, transitionMs }
  const key = await resolveEd25519Key(input.resolver, { keyId, agent, fragment }, options)
  const base = signatureBase(input.method, input.targetUri, digest, params.signatureParams)
  if (!(await provider.ed25519Verify(key.publicKey, base, sig))) {
    throw invalid(`signature by ${keyId} does not verify`)
  }
  const replay =
    input.nonces.checkAndRemember(keyId, nonce, input.now, input.bucket) === 'replay' ||
    (await input.sharedNonces?.(keyId, nonce, now + PROFILE.nonceMemoryMs)) === 'replay'
  if (replay) throw invalid('this nonce was already used with this key')
  if (input.expectedAgent !== undefined && agent !== input.expectedAgent) {
    throw new AgentMsgError('forbidden', `${agent} may not act for ${input.expectedAgent}`)
  }
  return { agent, keyId, source: key.source, level: levelForKeySource(key.source) }
}
