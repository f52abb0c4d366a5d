/**
 * Which keys of a document may verify a signature, and when (PROFILE §4): active keys always,
 * retired ones within their transition period, revoked ones never. A pure function of its
 * inputs (the clock is a parameter), so verifiers on different machines agree.
 */
import { base64urlDecode } from '../base64url.js'
import { invalidFormat } from '../errors.js'
import { formatTimestamp, parseTimestamp } from '../timestamps.js'
import type { IdentityDocument, IdentityKey } from './document.js'

/** PROFILE §4 default transition period of a retired key: 14 days, covering 8 days in flight. */
export const DEFAULT_TRANSITION_MS = 14 * 24 * 60 * 60 * 1000

/** A retired key still verifies signatures `created` up to 5 minutes after `retired_date`. */
export const RETIRED_KEY_CREATED_SLACK_MS = 5 * 60 * 1000

/** Result of {@link checkKeyUsable}. */
export type KeyUsability =
  | { ok: true; key: IdentityKey }
  | { ok: false; code: 'key_revoked' | 'unknown_sender'; message: string }

/** Options for {@link checkKeyUsable}. */
export interface CheckKeyUsableOptions {
  /** How long after `retired_date` a retired key still verifies. @default DEFAULT_TRANSITION_MS */
  transitionMs?: number
}

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

/** A timestamp for a message, which must not throw on times the wire format cannot write. */
function describeTime(ms: number): string {
  try {
    return formatTimestamp(ms)
  } catch {
    return `${ms} ms after 1970`
  }
}

/**
 * May the key `keyFragment` of `doc` verify a signature whose `created` is `signatureCreated`,
 * at time `now` (PROFILE §4)? Active keys: yes. Retired keys: only when `created` ≤
 * `retired_date` + 5 minutes and `now` ≤ `retired_date` + the transition period. Revoked keys
 * and retired ones outside those bounds: `key_revoked`, with a message for the error reply
 * (SPEC §3.1). A key the document does not list, or whose type is not `ed25519`:
 * `unknown_sender`.
 *
 * Pass a document that went through {@link validateIdentityDocument}.
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
  options: CheckKeyUsableOptions = {},
): KeyUsability {
  const transitionMs = options.transitionMs ?? DEFAULT_TRANSITION_MS
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
  if (!key) {
    return { ok: false, code: 'unknown_sender', message: `${name} is not in its identity document` }
  }
  if (key.type !== 'ed25519') {
    return {
      ok: false,
      code: 'unknown_sender',
      message: `${name} is a ${key.type} key, not ed25519`,
    }
  }
  if (key.status === 'active') return { ok: true, key }
  if (key.status === 'retired') {
    const retiredAt = parseTimestamp(key.retired_date as string, `keys[${index}].retired_date`)
    const retired = describeTime(retiredAt)
    const ended = retiredAt + transitionMs
    if (now > ended) {
      const period = describeDuration(transitionMs)
      return {
        ok: false,
        code: 'key_revoked',
        message: `${name} was retired at ${retired} and its ${period} transition period ended at ${describeTime(ended)}`,
      }
    }
    if (signatureCreated > retiredAt + RETIRED_KEY_CREATED_SLACK_MS) {
      return {
        ok: false,
        code: 'key_revoked',
        message: `signature created at ${describeTime(signatureCreated)}, more than 5 minutes after ${name} was retired at ${retired}`,
      }
    }
    return { ok: true, key }
  }
  return { ok: false, code: 'key_revoked', message: `${name} was revoked` }
}

/**
 * The raw public key of a key object.
 *
 * @throws AgentMsgError `invalid_format` when `public_key` is not canonical base64url of 32
 *   bytes, or the key is not an `ed25519` key.
 *
 * @example
 * const pk = publicKeyOf(doc.keys[0]) // Uint8Array(32)
 */
export function publicKeyOf(key: IdentityKey): Uint8Array {
  if (key.type !== 'ed25519') throw invalidFormat(`a ${key.type} key is not an ed25519 key`, 'type')
  const bytes = base64urlDecode(key.public_key, 'public_key')
  if (bytes.length !== 32) throw invalidFormat('an ed25519 public key is 32 bytes', 'public_key')
  return bytes
}
