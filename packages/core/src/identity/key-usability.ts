// Whether a key found for a signature may verify it (PROFILE §4, §5): active keys always, retired
// ones within their transition period, revoked ones never.
import { AgentMsgError, nonNegative } from '../errors.js'
import type { AbortOptions } from '../interfaces/storage.js'
import { PROFILE } from '../profile.js'
import type { KeyLookup, KeyResolution, KeyResolver, ResolvedKey } from '../resolver.js'
import { formatTimestamp, parseTimestamp } from '../timestamps.js'
import type { IdentityDocument, IdentityKey } from './document.js'

/** Result of {@link checkKeyUsable}. */
export type KeyUsability =
  | { ok: true; key: IdentityKey }
  | { ok: false; code: 'key_revoked' | 'unknown_sender'; message: string }

function describeDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ]
  for (const [size, name] of units) if (ms > 0 && ms % size === 0) return `${ms / size}-${name}`
  return `${ms} ms`
}

/** For an error message: must not throw on times the wire format cannot write. */
function describeTime(ms: number): string {
  try {
    return formatTimestamp(ms)
  } catch {
    return `${ms} ms after 1970`
  }
}

/** May key `keyFragment` of `doc` verify a signature made at `signatureCreated`, at `now`? */
export function checkKeyUsable(
  doc: IdentityDocument,
  keyFragment: string,
  signatureCreated: number,
  now: number,
  options: { transitionMs?: number } = {},
): KeyUsability {
  const transitionMs = nonNegative(options.transitionMs ?? PROFILE.keyTransitionMs, 'transitionMs')
  // NaN compares false with everything, so it would slip through the bounds below.
  if (!Number.isFinite(signatureCreated) || !Number.isFinite(now)) {
    throw new RangeError('signatureCreated and now must be finite epoch milliseconds')
  }
  const name = `key ${keyFragment} of ${doc.agent_id}`
  const index = doc.keys.findIndex((k) => k.key_id === keyFragment)
  const key = doc.keys[index]
  type Code = 'key_revoked' | 'unknown_sender'
  const refuse = (code: Code, message: string): KeyUsability => ({ ok: false, code, message })
  if (!key) return refuse('unknown_sender', `${name} is not in its identity document`)
  if (key.type !== 'ed25519')
    return refuse('unknown_sender', `${name} is a ${key.type} key, not ed25519`)
  if (key.status === 'active') return { ok: true, key }
  if (key.status !== 'retired') return refuse('key_revoked', `${name} was revoked`)
  const retiredAt = parseTimestamp(key.retired_date as string, `keys[${index}].retired_date`)
  const retired = describeTime(retiredAt)
  const ended = retiredAt + transitionMs
  if (now > ended) {
    return refuse(
      'key_revoked',
      `${name} was retired at ${retired} and its ${describeDuration(transitionMs)} transition period ended at ${describeTime(ended)}`,
    )
  }
  if (signatureCreated > retiredAt + PROFILE.clockSkewMs) {
    return refuse(
      'key_revoked',
      `signature created at ${describeTime(signatureCreated)}, more than ${PROFILE.clockSkewMs / 60_000} minutes after ${name} was retired at ${retired}`,
    )
  }
  return { ok: true, key }
}

/** An Ed25519 key a resolver found. */
export type ResolvedEd25519Key = Extract<ResolvedKey, { alg: 'ed25519' }>

/** The lookups that failed for now, as `unavailable` (503) with the longest wait; else undefined. */
export function unavailableKey(
  resolutions: readonly KeyResolution[],
  field?: string,
): AgentMsgError | undefined {
  let worst: Extract<KeyResolution, { status: 'unavailable' }> | undefined
  for (const r of resolutions) {
    if (r.status === 'unavailable' && !(worst && worst.retryAfter > r.retryAfter)) worst = r
  }
  if (!worst) return undefined
  const text = `a signing key could not be looked up now: ${worst.reason}`
  return new AgentMsgError('unavailable', text, {
    retryAfter: Math.max(1, worst.retryAfter),
    field,
  })
}

/** Throw unless `key`, found for `lookup`, may verify a signature made at `created` (PROFILE §4, §5). */
export function checkFoundKey(
  key: ResolvedKey,
  lookup: KeyLookup,
  created: number,
  now: number,
  transitionMs: number | undefined,
  field: string | undefined,
): void {
  if (key.alg !== lookup.alg) {
    const text = `resolver returned a ${key.alg} key for a ${lookup.alg} signature`
    throw new AgentMsgError('internal_error', text)
  }
  // A token introduces one peer (PROFILE §5): used by anyone else it is a failing signature.
  if (key.alg === 'hmac-sha256' && key.peer !== undefined && key.peer !== lookup.agent) {
    const text = `introduction token ${lookup.fragment} introduces another agent`
    throw new AgentMsgError('invalid_signature', text, { field })
  }
  if (key.alg === 'ed25519' && key.document) {
    const use = checkKeyUsable(key.document, lookup.fragment, created, now, { transitionMs })
    if (!use.ok) throw new AgentMsgError(use.code, use.message, { field })
  }
}

/** The Ed25519 key of a single signature (relay agent auth) as a verdict, or its refusal. */
export async function resolveEd25519Key(
  resolver: KeyResolver,
  lookup: Omit<KeyLookup, 'alg'>,
  options: AbortOptions & { created: number; now: number; transitionMs?: number; field?: string },
): Promise<ResolvedEd25519Key> {
  const { field } = options
  const full: KeyLookup = { ...lookup, alg: 'ed25519' }
  const res = await resolver.resolve(full, options.signal ? { signal: options.signal } : {})
  if (res.status === 'unavailable') throw unavailableKey([res], field)
  if (res.status === 'not_found') {
    const text = `no key found for ${lookup.keyId}: ${res.reason}`
    throw new AgentMsgError('unknown_sender', text, { field })
  }
  checkFoundKey(res.key, full, options.created, options.now, options.transitionMs, field)
  return res.key as ResolvedEd25519Key
}
