/**
 * Which keys of a document may verify a signature, and when (PROFILE §4): active keys always,
 * retired ones within their transition period, revoked ones never. A pure function of its
 * inputs (the clock is a parameter), so verifiers on different machines agree.
 */
import { PROFILE } from '../profile.js'
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

/**
 * May key `keyFragment` of `doc` (validated) verify a signature made at `signatureCreated`, at
 * `now`? Active: yes. Retired: when `created` ≤ `retired_date` + the clock skew and `now` ≤
 * `retired_date` + the transition period. Otherwise `key_revoked`; a key not listed, or not
 * `ed25519`: `unknown_sender`.
 *
 * @example
 * const r = checkKeyUsable(doc, 'k1', Date.parse(sig.created), Date.now())
 * if (!r.ok) throw new AgentMsgError(r.code, r.message)
 */
export function checkKeyUsable(
  doc: IdentityDocument,
  keyFragment: string,
  signatureCreated: number,
  now: number,
  options: { transitionMs?: number } = {},
): KeyUsability {
  const transitionMs = options.transitionMs ?? PROFILE.keyTransitionMs
  if (!Number.isFinite(transitionMs) || transitionMs < 0) {
    throw new RangeError('transitionMs must be a finite number of milliseconds ≥ 0')
  }
  // NaN compares false with everything, so it would slip through the bounds below.
  if (!Number.isFinite(signatureCreated) || !Number.isFinite(now)) {
    throw new RangeError('signatureCreated and now must be finite epoch milliseconds')
  }
  const name = `key ${keyFragment} of ${doc.agent_id}`
  const index = doc.keys.findIndex((k) => k.key_id === keyFragment)
  const key = doc.keys[index]
  const refuse = (code: 'key_revoked' | 'unknown_sender', message: string): KeyUsability => ({
    ok: false,
    code,
    message,
  })
  if (!key) return refuse('unknown_sender', `${name} is not in its identity document`)
  if (key.type !== 'ed25519') {
    return refuse('unknown_sender', `${name} is a ${key.type} key, not ed25519`)
  }
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
