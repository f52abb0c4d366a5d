import { getDefaultCryptoProvider } from '#crypto-default'
import { type KeySource, levelForKeySource } from './auth-level.js'
import { constantTimeEqual, utf8Encode } from './bytes.js'
import { type CryptoMode, type CryptoProvider, callEnded, callStarted } from './crypto/provider.js'
import { AgentMsgError } from './errors.js'
import { checkFoundKey, unavailableKey } from './identity/key-usability.js'
import type { AbortOptions } from './interfaces/storage.js'
import { validateMessage } from './message.js'
import type { KeyResolution, KeyResolver, ResolvedKey } from './resolver.js'
import { receivedSigningText } from './sign.js'
import type { AuthLevel, Message, SignatureAlg } from './types.js'
import { type Candidate, candidatesOf, refuse } from './verify-candidates.js'

/** Options for {@link verifyMessage}. */
export interface VerifyOptions extends AbortOptions {
  /** For `created` skew and retired-key bounds. @default Date.now() */
  now?: number
  /** @default PROFILE.keyTransitionMs */
  transitionMs?: number
  /** @default the platform's */
  provider?: CryptoProvider
  /** Skip {@link validateMessage}: the caller has just run it. @default false */
  validated?: boolean
  /** Where Ed25519 verification runs (see {@link CryptoMode}); servers pass `pool`. @default 'auto' */
  crypto?: CryptoMode
}

/** One signature that verified. */
export interface VerifiedSignature {
  keyId: string
  alg: SignatureAlg
  source: KeySource
  level: AuthLevel
  publicKey?: Uint8Array
}

/** The verdict on an authentic message: its best signature and every one that verified. */
export interface VerifyResult extends VerifiedSignature {
  /** Every verified signature, best first. */
  signatures: VerifiedSignature[]
}

type Held = { c: Candidate; key: ResolvedKey }

/** The candidates whose keys were found and may be used (PROFILE §4, §5), or the refusal. */
function heldKeys(
  candidates: Candidate[],
  resolutions: KeyResolution[],
  now: number,
  transitionMs: number | undefined,
): Held[] {
  const unavailable = unavailableKey(resolutions)
  if (unavailable) throw unavailable
  const held: Held[] = []
  const notFound: string[] = []
  resolutions.forEach((r, i) => {
    const c = candidates[i]!
    if (r.status !== 'found') {
      notFound.push(`${c.lookup.keyId}: ${r.reason}`)
      return
    }
    const field = `security.signatures[${c.index}].key_id`
    checkFoundKey(r.key, c.lookup, c.created, now, transitionMs, field)
    held.push({ c, key: r.key })
  })
  // Nothing unavailable and nothing held: every key was not found.
  if (held.length === 0) {
    const text = `no key found for ${notFound.join('; ')}`
    throw new AgentMsgError('unknown_sender', text, { field: 'security.signatures' })
  }
  return held
}

function verdictOf(held: Held[], results: boolean[]): VerifyResult {
  const verified: VerifiedSignature[] = []
  for (let i = 0; i < held.length; i++) {
    const { c, key } = held[i]!
    const { keyId, alg } = c.lookup
    const { source } = key
    if (!results[i]) {
      throw refuse(`signature by ${keyId} does not verify`, `security.signatures[${c.index}].sig`)
    }
    const v: VerifiedSignature = { keyId, alg, source, level: levelForKeySource(source) }
    if (key.alg === 'ed25519') v.publicKey = key.publicKey
    verified.push(v)
  }
  verified.sort((a, b) => b.level - a.level)
  return { ...verified[0]!, signatures: verified }
}

/** Verify a message's signatures (PROFILE §3, §4, §11): the best one, its level, and all. */
export async function verifyMessage(
  message: Message | unknown,
  resolver: KeyResolver,
  options: VerifyOptions = {},
): Promise<VerifyResult> {
  callStarted()
  try {
    const msg = options.validated ? (message as Message) : validateMessage(message).message
    const now = options.now ?? Date.now()
    const provider = options.provider ?? getDefaultCryptoProvider()
    const candidates = candidatesOf(msg, now)

    const lookupOptions = options.signal ? { signal: options.signal } : {}
    const resolutions =
      candidates.length === 1
        ? [await resolver.resolve(candidates[0]!.lookup, lookupOptions)]
        : await Promise.all(candidates.map((c) => resolver.resolve(c.lookup, lookupOptions)))
    const held = heldKeys(candidates, resolutions, now, options.transitionMs)

    const check = ({ c, key }: Held): Promise<boolean> => {
      const text = receivedSigningText(msg as unknown as Record<string, unknown>, c.sig)
      const input = provider.utf8 ? provider.utf8(text) : utf8Encode(text)
      if (key.alg === 'ed25519') {
        return provider.ed25519Verify(key.publicKey, input, c.sigBytes, options.crypto ?? 'auto')
      }
      return provider
        .hmacSha256(key.secret, input)
        .then((mac) => constantTimeEqual(mac, c.sigBytes))
    }
    const results = held.length === 1 ? [await check(held[0]!)] : await Promise.all(held.map(check))
    const verdict = verdictOf(held, results)
    // All verified: an unbound token now introduces this sender, unless another took it (§5).
    for (const { c, key } of held) {
      if (key.alg === 'hmac-sha256' && key.bind && !(await key.bind(c.lookup.agent))) {
        throw refuse(
          `introduction token ${c.lookup.fragment} introduces another agent`,
          `security.signatures[${c.index}].key_id`,
        )
      }
    }
    return verdict
  } finally {
    callEnded()
  }
}
