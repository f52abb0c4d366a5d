import { AgentMsgError } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import {
  classifyError,
  classifyResponse,
  nextAttemptAt,
  parseRetryAfter,
  RETRY_CAP_MS,
  retryDelay,
} from '../src/retry.js'

const H = (init: Record<string, string> = {}) => new Headers(init)
const HOUR = 3_600_000
const DAY = 24 * HOUR

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

describe('classifyResponse', () => {
  const now = Date.UTC(2030, 0, 1)
  it('treats 202 and every other 2xx as delivered', () => {
    for (const s of [200, 201, 202, 204, 299]) {
      expect(classifyResponse(s, H(), now)).toEqual({ kind: 'delivered', status: s })
    }
  })
  it('retries 5xx', () => {
    for (const s of [500, 502, 503, 504, 599]) {
      expect(classifyResponse(s, H(), now)).toMatchObject({ kind: 'retry', status: s })
    }
  })
  it('honours Retry-After on 429 and 503', () => {
    expect(classifyResponse(429, H({ 'Retry-After': '7' }), now)).toMatchObject({
      kind: 'retry-after',
      retryAfterMs: 7000,
      status: 429,
    })
    const date = new Date(now + 30_000).toUTCString()
    expect(classifyResponse(503, H({ 'Retry-After': date }), now)).toMatchObject({
      kind: 'retry-after',
      retryAfterMs: 30_000,
      status: 503,
    })
  })
  it('ignores Retry-After on other statuses and when invalid', () => {
    expect(classifyResponse(500, H({ 'Retry-After': '7' }), now).kind).toBe('retry')
    expect(classifyResponse(503, H({ 'Retry-After': 'later' }), now).kind).toBe('retry')
  })
  it('never retries other 4xx, a 429 without permission, or redirects', () => {
    for (const s of [400, 401, 403, 404, 405, 408, 409, 413, 415, 422, 429]) {
      expect(classifyResponse(s, H(), now)).toMatchObject({ kind: 'fail', status: s })
    }
    expect(classifyResponse(308, H({ Location: 'https://x.example/' }), now)).toMatchObject({
      kind: 'fail',
      reason: expect.stringMatching(/redirect/),
    })
  })
})

describe('classifyError', () => {
  it('retries network errors and timeouts', () => {
    const net = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
    })
    expect(classifyError(net)).toMatchObject({
      kind: 'retry',
      reason: expect.stringMatching(/ECONNREFUSED/),
    })
    const timeout = new DOMException('took too long', 'TimeoutError')
    expect(classifyError(timeout)).toMatchObject({
      kind: 'retry',
      reason: expect.stringMatching(/^timeout/),
    })
    expect(classifyError('weird')).toMatchObject({ kind: 'retry' })
  })
  it('fails at once on an AgentMsgError that will not pass', () => {
    expect(classifyError(new AgentMsgError('forbidden', 'address refused'))).toMatchObject({
      kind: 'fail',
    })
    expect(classifyError(new AgentMsgError('unavailable', 'busy'))).toMatchObject({ kind: 'retry' })
  })
})

describe('nextAttemptAt', () => {
  const first = 1_000_000
  const retry = { kind: 'retry', reason: 'status 500', status: 500 } as const
  const after = (ms: number) =>
    ({ kind: 'retry-after', retryAfterMs: ms, reason: 'status 429', status: 429 }) as const

  it('schedules the backoff after now', () => {
    const next = nextAttemptAt(
      retry,
      { attempts: 3, firstAttempt: first, now: first + 5000 },
      { random: () => 0.5 },
    )
    expect(next).toEqual({ retry: true, at: first + 5000 + 2000, delayMs: 2000 })
  })

  it('shortens a backoff to end at the deadline, then stops', () => {
    const now = first + DAY - 10
    const last = nextAttemptAt(
      retry,
      { attempts: 30, firstAttempt: first, now },
      { random: () => 0.9 },
    )
    expect(last).toEqual({ retry: true, at: first + DAY, delayMs: 10 })
    const none = nextAttemptAt(retry, { attempts: 31, firstAttempt: first, now: first + DAY })
    expect(none).toMatchObject({
      retry: false,
      reason: expect.stringMatching(/deadline.*31 attempts/),
    })
  })

  it('waits at least Retry-After, and the backoff when that is longer', () => {
    const state = { attempts: 1, firstAttempt: first, now: first }
    expect(nextAttemptAt(after(7000), state, { random: () => 0.99 })).toEqual({
      retry: true,
      at: first + 7000,
      delayMs: 7000,
    })
    const later = { attempts: 10, firstAttempt: first, now: first }
    expect(nextAttemptAt(after(0), later, { random: () => 0.5 })).toMatchObject({
      delayMs: 256_000,
    })
  })

  it('gives up when Retry-After points past the deadline', () => {
    const state = { attempts: 2, firstAttempt: first, now: first + DAY - 5000 }
    expect(nextAttemptAt(after(6000), state)).toMatchObject({
      retry: false,
      reason: expect.stringMatching(/past the delivery deadline/),
    })
    expect(nextAttemptAt(after(5000), state)).toMatchObject({ retry: true, at: first + DAY })
  })

  it('takes a custom deadline', () => {
    const state = { attempts: 1, firstAttempt: first, now: first + 60_000 }
    expect(nextAttemptAt(retry, state, { deadlineMs: 60_000 }).retry).toBe(false)
  })
})
