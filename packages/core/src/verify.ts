import { getDefaultCryptoProvider } from '#crypto-default'
import { type KeySource, levelForKeySource } from './auth-level.js'
import { base64urlDecode } from './base64url.js'
import { constantTimeEqual } from './bytes.js'
import type { CryptoProvider } from './crypto/provider.js'
import { didKeyFragment, isDidKey } from './did-key.js'
import { AgentMsgError } from './errors.js'
import { checkKeyUsable, DEFAULT_TRANSITION_MS } from './identity.js'
import type { AbortOptions } from './interfaces/abort.js'
import { validateMessage } from './message.js'
import type { KeyLookup, KeyResolver, ResolvedKey } from './resolver.js'
import { UNSIGNED_MEMBERS } from './sign.js'
import { buildSigningInput } from './signing-input.js'
import { parseTimestamp } from './timestamps.js'
import type { AuthLevel, Message, SignatureAlg } from './types.js'

/** How far in the future a signature's `created` may be (PROFILE §3). */
const MAX_CREATED_SKEW_MS = 5 * 60_000
const INTRO_FRAGMENT_RE = /^intro-[A-Za-z0-9_-]{16}$/
const SIG_BYTES: Record<SignatureAlg, number> = { ed25519: 64, 'hmac-sha256': 32 }

/** Options for {@link verifyMessage}. */
export interface VerifyOptions extends AbortOptions {
  /** The current time in ms (for `created` skew and retired-key bounds). @default Date.now() */
  now?: number
  /** Transition period of retired keys (PROFILE §4). @default 14 days */
  transitionMs?: number
  /** The crypto provider. @default the platform's (node:crypto, WebCrypto or noble) */
  provider?: CryptoProvider
  /** Skip {@link validateMessage} because the caller has just run it. @default false */
  validated?: boolean
}

/** One signature that verified. */
export interface VerifiedSignature {
  keyId: string
  alg: SignatureAlg
  source: KeySource
  level: AuthLevel
  /** The Ed25519 public key (absent for HMAC). */
  publicKey?: Uint8Array
}

/** The verdict on an authentic message: its best signature and every one that verified. */
export interface VerifyResult extends VerifiedSignature {
  /** Every verified signature, best (highest level) first. */
  signatures: VerifiedSignature[]
}

interface Candidate {
  index: number
  sig: Record<string, unknown> & { alg: SignatureAlg; key_id: string; signed_headers: string[] }
  lookup: KeyLookup
  created: number
  sigBytes: Uint8Array
}

const refuse = (message: string, field: string) =>
  new AgentMsgError('invalid_signature', message, { field })

function usable(
  raw: Record<string, unknown>,
  index: number,
  message: Message,
  required: Set<string>,
  now: number,
): Candidate {
  const field = `security.signatures[${index}]`
  const alg = raw.alg as SignatureAlg
  if (raw.signed_body !== true) throw refuse('signed_body must be true', `${field}.signed_body`)
  const headers = raw.signed_headers
  if (!Array.isArray(headers) || headers.some((h) => typeof h !== 'string')) {
    throw refuse('signed_headers must be an array of strings', `${field}.signed_headers`)
  }
  const named = new Set<string>(headers as string[])
  if (named.size !== headers.length)
    throw refuse('signed_headers names a member twice', `${field}.signed_headers`)
  for (const name of named) {
    if (!required.has(name)) {
      throw refuse(
        `signed_headers names "${name}", which is absent or never signed`,
        `${field}.signed_headers`,
      )
    }
  }
  if (named.size !== required.size) {
    const missing = [...required].filter((n) => !named.has(n))
    throw refuse(`signed_headers does not cover ${missing.join(', ')}`, `${field}.signed_headers`)
  }

  const keyId = raw.key_id
  if (typeof keyId !== 'string') throw refuse('key_id must be a string', `${field}.key_id`)
  const hash = keyId.lastIndexOf('#')
  const agent = keyId.slice(0, hash)
  const fragment = keyId.slice(hash + 1)
  if (hash <= 0 || fragment === '')
    throw refuse('key_id must be <agent_id>#<fragment>', `${field}.key_id`)
  if (agent !== message.from.agent) {
    throw refuse(
      `key_id belongs to ${agent}, not to from.agent ${message.from.agent}`,
      `${field}.key_id`,
    )
  }
  if (alg === 'ed25519' && isDidKey(agent) && fragment !== didKeyFragment(agent)) {
    throw refuse(
      "a did:key signature's key_id fragment is the DID's method-specific id",
      `${field}.key_id`,
    )
  }
  if (alg === 'hmac-sha256' && !INTRO_FRAGMENT_RE.test(fragment)) {
    throw refuse('an hmac-sha256 key_id uses the introduction fragment intro-…', `${field}.key_id`)
  }

  let created: number
  try {
    created = parseTimestamp(raw.created as string, `${field}.created`)
  } catch {
    throw refuse('created must be an RFC 3339 UTC timestamp', `${field}.created`)
  }
  if (typeof raw.created !== 'string') throw refuse('created must be a string', `${field}.created`)
  if (created > now + MAX_CREATED_SKEW_MS)
    throw refuse('created is more than 5 minutes in the future', `${field}.created`)

  if (typeof raw.sig !== 'string') throw refuse('sig must be a string', `${field}.sig`)
  let sigBytes: Uint8Array
  try {
    sigBytes = base64urlDecode(raw.sig)
  } catch {
    throw refuse('sig must be canonical unpadded base64url', `${field}.sig`)
  }
  if (sigBytes.length !== SIG_BYTES[alg])
    throw refuse(`sig must be ${SIG_BYTES[alg]} bytes`, `${field}.sig`)

  return {
    index,
    sig: raw as Candidate['sig'],
    lookup: { keyId, agent, fragment, alg },
    created,
    sigBytes,
  }
}

function signingInputOf(message: Message, sig: Candidate['sig']): Uint8Array {
  // Every own member but `sig` is bound (PROFILE §3). Object.fromEntries defines members, so a
  // `"__proto__"` member is kept as one; `params[k] = …` would hit the prototype setter and
  // leave it out of the signing input, unsigned.
  const params = Object.fromEntries(Object.entries(sig).filter(([k]) => k !== 'sig'))
  return buildSigningInput(
    message as unknown as Record<string, unknown>,
    sig.signed_headers,
    true,
    params,
  )
}

/**
 * Verify a message's signatures (PROFILE §3, §4, §11) and return the verdict: the best
 * verified signature with its key source and authentication level, plus all that verified.
 *
 * Throws an {@link AgentMsgError}: `invalid_format` (bad message), `invalid_signature` (none
 * usable, a broken §3 rule, or any signature failing), `unknown_sender` (keys not found),
 * `key_revoked` (revoked, or retired outside its bounds), or `unavailable` with `retryAfter`
 * (a key lookup failed for now — not a verdict).
 *
 * @example
 * const resolver = createKeyResolver({ keyStore })
 * const { level, source } = await verifyMessage(message, resolver)
 */
export async function verifyMessage(
  message: Message | unknown,
  resolver: KeyResolver,
  options: VerifyOptions = {},
): Promise<VerifyResult> {
  const msg = options.validated ? (message as Message) : validateMessage(message).message
  const now = options.now ?? Date.now()
  const provider = options.provider ?? getDefaultCryptoProvider()
  const sigs = msg.security?.signatures
  if (!sigs || sigs.length === 0) throw refuse('the message is unsigned', 'security.signatures')

  const required = new Set<string>()
  for (const k of Object.keys(msg)) {
    if (!UNSIGNED_MEMBERS.has(k) && (msg as Record<string, unknown>)[k] !== undefined)
      required.add(k)
  }
  const candidates: Candidate[] = []
  for (let i = 0; i < sigs.length; i++) {
    const raw = sigs[i] as unknown as Record<string, unknown>
    // Unknown algorithms are set aside before any other rule applies to them (PROFILE §3).
    if (raw.alg !== 'ed25519' && raw.alg !== 'hmac-sha256') continue
    candidates.push(usable(raw, i, msg, required, now))
  }
  if (candidates.length === 0)
    throw refuse('no signature with a supported algorithm', 'security.signatures')

  const resolutions = await Promise.all(
    candidates.map((c) =>
      resolver.resolve(c.lookup, options.signal ? { signal: options.signal } : {}),
    ),
  )
  let retryAfter = 0
  let unavailableReason = ''
  for (const r of resolutions) {
    if (r.status === 'unavailable' && r.retryAfter >= retryAfter) {
      retryAfter = r.retryAfter
      unavailableReason = r.reason
    }
  }
  if (unavailableReason) {
    throw new AgentMsgError(
      'unavailable',
      `a signing key could not be looked up now: ${unavailableReason}`,
      { retryAfter: Math.max(1, retryAfter) },
    )
  }

  const held: Array<{ c: Candidate; key: ResolvedKey }> = []
  const notFound: string[] = []
  resolutions.forEach((r, i) => {
    const c = candidates[i]!
    if (r.status === 'found') {
      if (r.key.alg !== c.lookup.alg)
        throw new AgentMsgError(
          'internal_error',
          `resolver returned a ${r.key.alg} key for a ${c.lookup.alg} signature`,
        )
      held.push({ c, key: r.key })
    } else notFound.push(`${c.lookup.keyId}: ${r.status === 'not_found' ? r.reason : ''}`)
  })

  for (const { c, key } of held) {
    // A token introduces one peer (PROFILE §5): used by anyone else it is a failing signature.
    if (key.alg === 'hmac-sha256' && key.peer !== undefined && key.peer !== c.lookup.agent) {
      throw refuse(
        `introduction token ${c.lookup.fragment} introduces another agent`,
        `security.signatures[${c.index}].key_id`,
      )
    }
    if (key.alg === 'ed25519' && key.document) {
      const use = checkKeyUsable(key.document, c.lookup.fragment, c.created, now, {
        transitionMs: options.transitionMs ?? DEFAULT_TRANSITION_MS,
      })
      if (!use.ok) {
        throw new AgentMsgError(use.code, use.message, {
          field: `security.signatures[${c.index}].key_id`,
        })
      }
    }
  }
  if (held.length === 0) {
    if (notFound.length > 0)
      throw new AgentMsgError('unknown_sender', `no key found for ${notFound.join('; ')}`, {
        field: 'security.signatures',
      })
    throw refuse('no usable signature', 'security.signatures')
  }

  const results = await Promise.all(
    held.map(async ({ c, key }) => {
      const input = signingInputOf(msg, c.sig)
      if (key.alg === 'ed25519') return provider.ed25519Verify(key.publicKey, input, c.sigBytes)
      const mac = await provider.hmacSha256(key.secret, input)
      return constantTimeEqual(mac, c.sigBytes)
    }),
  )
  const verified: VerifiedSignature[] = []
  for (let i = 0; i < held.length; i++) {
    const { c, key } = held[i]!
    if (!results[i])
      throw refuse(
        `signature by ${c.lookup.keyId} does not verify`,
        `security.signatures[${c.index}].sig`,
      )
    const v: VerifiedSignature = {
      keyId: c.lookup.keyId,
      alg: c.lookup.alg,
      source: key.source,
      level: levelForKeySource(key.source),
    }
    if (key.alg === 'ed25519') v.publicKey = key.publicKey
    verified.push(v)
  }
  // Every signature verified: an unbound token now introduces this sender, unless another
  // sender's message bound it first (PROFILE §5).
  for (const { c, key } of held) {
    if (key.alg === 'hmac-sha256' && key.bind && !(await key.bind(c.lookup.agent))) {
      throw refuse(
        `introduction token ${c.lookup.fragment} introduces another agent`,
        `security.signatures[${c.index}].key_id`,
      )
    }
  }
  verified.sort((a, b) => b.level - a.level)
  return { ...verified[0]!, signatures: verified }
}
