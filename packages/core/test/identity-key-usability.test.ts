/** `checkKeyUsable` (retired-key bounds, PROFILE §4) and `publicKeyOf`. */
import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../src/base64url.js'
import { revokeKey, rotateKey } from '../src/identity/create.js'
import { publicKeyOf } from '../src/identity/document.js'
import { checkKeyUsable } from '../src/identity/key-usability.js'
import { PROFILE } from '../src/profile.js'
import { formatTimestamp } from '../src/timestamps.js'
import { AGENT, errorOf, pk1, pk2, T0, urlDoc } from './identity-helpers.js'

const DEFAULT_TRANSITION_MS = PROFILE.keyTransitionMs

describe('checkKeyUsable', () => {
  const RETIRED = T0 + 30 * 86_400_000
  const FIVE_MIN = 5 * 60_000
  const rotated = rotateKey(urlDoc(), { publicKey: pk2, keyId: 'k2' }, { now: RETIRED })

  it('accepts active keys whatever the times', () => {
    const r = checkKeyUsable(rotated, 'k2', RETIRED + 1e12, RETIRED + 1e12)
    expect(r).toEqual({ ok: true, key: rotated.keys[1] })
  })

  it('accepts a retired key up to retired_date + 5 minutes for created', () => {
    expect(checkKeyUsable(rotated, 'k1', RETIRED - 1000, RETIRED).ok).toBe(true)
    expect(checkKeyUsable(rotated, 'k1', RETIRED + FIVE_MIN, RETIRED + FIVE_MIN).ok).toBe(true)
    const late = checkKeyUsable(rotated, 'k1', RETIRED + FIVE_MIN + 1, RETIRED + FIVE_MIN + 1)
    expect(late).toEqual({
      ok: false,
      code: 'key_revoked',
      message: `signature created at ${formatTimestamp(RETIRED + FIVE_MIN + 1)}, more than 5 minutes after key k1 of ${AGENT} was retired at ${formatTimestamp(RETIRED)}`,
    })
  })

  it('accepts a retired key until retired_date + 14 days', () => {
    expect(DEFAULT_TRANSITION_MS).toBe(14 * 86_400_000)
    expect(checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + DEFAULT_TRANSITION_MS).ok).toBe(true)
    const r = checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + DEFAULT_TRANSITION_MS + 1)
    expect(r).toEqual({
      ok: false,
      code: 'key_revoked',
      message: `key k1 of ${AGENT} was retired at ${formatTimestamp(RETIRED)} and its 14-day transition period ended at ${formatTimestamp(RETIRED + DEFAULT_TRANSITION_MS)}`,
    })
  })

  it('honours a custom transition period', () => {
    const transitionMs = 2 * 3_600_000
    expect(
      checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + transitionMs, { transitionMs }).ok,
    ).toBe(true)
    const r = checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + transitionMs + 1, { transitionMs })
    expect(r.ok).toBe(false)
    expect(!r.ok && r.message).toMatch(/2-hour transition period/)
    expect(checkKeyUsable(rotated, 'k1', RETIRED, RETIRED + 1, { transitionMs: 0 }).ok).toBe(false)
    expect(() => checkKeyUsable(rotated, 'k1', RETIRED, RETIRED, { transitionMs: -1 })).toThrow(
      RangeError,
    )
  })

  it('refuses revoked keys, also within the bounds a retired key would have', () => {
    const revoked = revokeKey(rotated, 'k1')
    expect(checkKeyUsable(revoked, 'k1', RETIRED, RETIRED)).toEqual({
      ok: false,
      code: 'key_revoked',
      message: `key k1 of ${AGENT} was revoked`,
    })
    expect(checkKeyUsable(revokeKey(urlDoc(), 'k1'), 'k1', T0, T0).ok).toBe(false)
  })

  it('reports keys the document does not list as unknown_sender', () => {
    const r = checkKeyUsable(rotated, 'k9', RETIRED, RETIRED)
    expect(r).toMatchObject({ ok: false, code: 'unknown_sender' })
    expect(!r.ok && r.message).toMatch(/k9/)
  })

  it('refuses NaN times rather than letting them pass the bounds', () => {
    expect(() => checkKeyUsable(rotated, 'k1', NaN, RETIRED)).toThrow(RangeError)
    expect(() => checkKeyUsable(rotated, 'k1', RETIRED, NaN)).toThrow(RangeError)
  })
})

describe('publicKeyOf', () => {
  it('decodes the public key', () => {
    expect(publicKeyOf(urlDoc().keys[0]!)).toEqual(pk1)
  })

  it('refuses malformed keys', () => {
    const k = urlDoc().keys[0]!
    expect(
      errorOf(() => publicKeyOf({ ...k, public_key: base64urlEncode(pk1.slice(2)) })).code,
    ).toBe('invalid_format')
    expect(errorOf(() => publicKeyOf({ ...k, public_key: `${k.public_key}=` })).code).toBe(
      'invalid_format',
    )
  })
})
