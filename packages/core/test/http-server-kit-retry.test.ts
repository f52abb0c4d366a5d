/**
 * PROFILE §6 retry timing in core's toolkit: full-jitter backoff (1 s base, ×2, 1 h cap) and
 * `Retry-After` (delay-seconds or an HTTP-date, nothing else).
 */
import { describe, expect, it } from 'vitest'
import { backoffDelay, parseRetryAfter } from '../src/http/retry.js'
import { PROFILE } from '../src/profile.js'

const RETRY_CAP_MS = PROFILE.retryCapMs
const HOUR = 3_600_000
const retryDelay = (attempt: number, random?: () => number) =>
  backoffDelay(attempt, random ? { random } : {})

describe('retryDelay (full jitter, 1 s base, ×2, 1 h cap)', () => {
  it('stays within [0, min(1 h, 1 s × 2^(n−1)))', () => {
    for (let attempt = 1; attempt <= 40; attempt++) {
      const ceiling = Math.min(RETRY_CAP_MS, 1000 * 2 ** (attempt - 1))
      expect(retryDelay(attempt, () => 0)).toBe(0)
      expect(retryDelay(attempt, () => 0.5)).toBe(Math.floor(ceiling / 2))
      const top = retryDelay(attempt, () => 0.999_999_999)
      expect(top).toBeLessThan(ceiling)
      expect(top).toBeGreaterThanOrEqual(ceiling - 1)
      for (let i = 0; i < 50; i++) {
        const d = retryDelay(attempt)
        expect(Number.isInteger(d)).toBe(true)
        expect(d).toBeGreaterThanOrEqual(0)
        expect(d).toBeLessThan(ceiling)
      }
    }
  })

  it('doubles the ceiling per attempt until the cap', () => {
    const max = (n: number) => retryDelay(n, () => 0.999_999_999) + 1
    expect([1, 2, 3, 4].map(max)).toEqual([1000, 2000, 4000, 8000])
    expect(max(12)).toBe(2_048_000)
    expect(max(13)).toBe(HOUR)
    expect(max(1000)).toBe(HOUR)
  })

  it('keeps the bound exclusive for a random() returning 1 or garbage', () => {
    expect(retryDelay(1, () => 1)).toBe(999)
    expect(retryDelay(1, () => Number.NaN)).toBe(0)
    expect(retryDelay(1, () => -3)).toBe(0)
  })

  it('refuses attempt numbers below 1', () => {
    expect(() => retryDelay(0)).toThrow(RangeError)
    expect(() => retryDelay(1.5)).toThrow(RangeError)
  })
})

describe('parseRetryAfter', () => {
  const now = Date.UTC(2030, 0, 1, 12, 0, 0)
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('7', now)).toBe(7000)
    expect(parseRetryAfter(' 0 ', now)).toBe(0)
  })
  it('reads HTTP-dates (IMF-fixdate, RFC 850, asctime)', () => {
    expect(parseRetryAfter('Tue, 01 Jan 2030 12:00:10 GMT', now)).toBe(10_000)
    expect(parseRetryAfter('Tuesday, 01-Jan-30 12:00:10 GMT', now)).toBe(10_000)
    expect(parseRetryAfter('Tue Jan  1 12:00:10 2030', now)).toBeGreaterThanOrEqual(0)
    expect(parseRetryAfter('Tue, 01 Jan 2030 11:00:00 GMT', now)).toBe(0)
  })
  it('ignores anything else', () => {
    for (const v of [null, undefined, '', '-1', '1.5', '+3', 'soon', '2030-01-01', '7 s']) {
      expect(parseRetryAfter(v, now)).toBeUndefined()
    }
  })
})
