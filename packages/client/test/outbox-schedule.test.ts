/**
 * PROFILE §6's retry schedule as the outbox applies it: core's full-jitter backoff and
 * Retry-After reading, the one refusal rule (a peer's answer that is not "for now" ends a
 * delivery; anything else moves on), the 24 h deadline, and the clocks. (Ported from the https
 * transport's retry and clock tests.)
 */
import { AgentMsgError } from '@agentmsg/core'
import { backoffDelay, parseRetryAfter } from '@agentmsg/core/http'
import { describe, expect, it } from 'vitest'
import { nextAttempt, systemClock } from '../src/agent/outbox.js'
import { isRefusal } from '../src/agent/route.js'
import { createManualClock } from './outbox-helpers.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const RETRY_CAP_MS = HOUR

describe('backoffDelay (full jitter, 1 s base, ×2, 1 h cap)', () => {
  it('stays within [0, min(1 h, 1 s × 2^(n−1)))', () => {
    for (let attempt = 1; attempt <= 40; attempt++) {
      const ceiling = Math.min(RETRY_CAP_MS, 1000 * 2 ** (attempt - 1))
      expect(backoffDelay(attempt, { random: () => 0 })).toBe(0)
      expect(backoffDelay(attempt, { random: () => 0.5 })).toBe(Math.floor(ceiling / 2))
      const top = backoffDelay(attempt, { random: () => 0.999_999_999 })
      expect(top).toBeLessThan(ceiling)
      expect(top).toBeGreaterThanOrEqual(ceiling - 1)
      for (let i = 0; i < 50; i++) {
        const d = backoffDelay(attempt)
        expect(Number.isInteger(d)).toBe(true)
        expect(d).toBeGreaterThanOrEqual(0)
        expect(d).toBeLessThan(ceiling)
      }
    }
  })

  it('doubles the ceiling per attempt until the cap', () => {
    const max = (n: number) => backoffDelay(n, { random: () => 0.999_999_999 }) + 1
    expect([1, 2, 3, 4].map(max)).toEqual([1000, 2000, 4000, 8000])
    expect(max(12)).toBe(2_048_000)
    expect(max(13)).toBe(HOUR)
    expect(max(1000)).toBe(HOUR)
  })

  it('keeps the bound exclusive for a random() returning 1 or garbage', () => {
    expect(backoffDelay(1, { random: () => 1 })).toBe(999)
    expect(backoffDelay(1, { random: () => Number.NaN })).toBe(0)
    expect(backoffDelay(1, { random: () => -3 })).toBe(0)
  })

  it('refuses attempt numbers below 1', () => {
    expect(() => backoffDelay(0)).toThrow(RangeError)
    expect(() => backoffDelay(1.5)).toThrow(RangeError)
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

/** A peer's answer, as the transports report it. */
const answered = (status: number, code: ConstructorParameters<typeof AgentMsgError>[0]) =>
  new AgentMsgError(code, `status ${status}`, { peerStatus: status })

describe('the refusal rule (one for every kind of target)', () => {
  it('a peer answering 5xx or 429 is not a refusal: the next target is tried', () => {
    for (const s of [500, 502, 503, 504]) {
      expect(isRefusal(answered(s, s === 503 ? 'unavailable' : 'internal_error'))).toBe(false)
    }
    expect(isRefusal(answered(429, 'rate_limited'))).toBe(false)
  })

  it('other 4xx answers and redirects are refusals: never retried', () => {
    for (const s of [400, 401, 403, 404, 405, 409, 413, 415, 422]) {
      expect(isRefusal(answered(s, s === 404 ? 'not_found' : 'invalid_format'))).toBe(true)
    }
    expect(isRefusal(answered(308, 'not_found'))).toBe(true)
  })

  it('no answer is no refusal: network errors, timeouts, a refused address', () => {
    const net = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
    })
    expect(isRefusal(net)).toBe(false)
    expect(isRefusal(new DOMException('took too long', 'TimeoutError'))).toBe(false)
    expect(isRefusal('weird')).toBe(false)
    expect(isRefusal(new AgentMsgError('forbidden', 'address refused'))).toBe(false)
    expect(isRefusal(new AgentMsgError('unavailable', 'busy'))).toBe(false)
  })
})

describe('nextAttempt', () => {
  const first = 1_000_000

  it('schedules the backoff after now', () => {
    const next = nextAttempt(
      { attempts: 3, firstAttempt: first, now: first + 5000 },
      undefined,
      () => 0.5,
    )
    expect(next).toEqual({ at: first + 5000 + 2000 })
  })

  it('shortens a backoff to end at the deadline, then stops', () => {
    const now = first + DAY - 10
    const last = nextAttempt({ attempts: 30, firstAttempt: first, now }, undefined, () => 0.9)
    expect(last).toEqual({ at: first + DAY })
    const none = nextAttempt({ attempts: 31, firstAttempt: first, now: first + DAY }, undefined)
    expect(none).toMatchObject({ reason: expect.stringMatching(/deadline.*31 attempts/) })
  })

  it('waits at least Retry-After, and the backoff when that is longer', () => {
    const state = { attempts: 1, firstAttempt: first, now: first }
    expect(nextAttempt(state, 7000, () => 0.99)).toEqual({ at: first + 7000 })
    const later = { attempts: 10, firstAttempt: first, now: first }
    expect(nextAttempt(later, 0, () => 0.5)).toEqual({ at: first + 256_000 })
  })

  it('gives up when Retry-After points past the deadline', () => {
    const state = { attempts: 2, firstAttempt: first, now: first + DAY - 5000 }
    expect(nextAttempt(state, 6000)).toMatchObject({
      reason: expect.stringMatching(/past the delivery deadline/),
    })
    expect(nextAttempt(state, 5000)).toEqual({ at: first + DAY })
  })
})

describe('createManualClock (the tests’ clock)', () => {
  it('fires due timers in order, with now() at each due time', () => {
    const clock = createManualClock(1000)
    const seen: Array<[string, number]> = []
    clock.setTimeout(() => seen.push(['b', clock.now()]), 20)
    clock.setTimeout(() => seen.push(['a', clock.now()]), 10)
    clock.setTimeout(() => seen.push(['a2', clock.now()]), 10)
    clock.setTimeout(() => seen.push(['late', clock.now()]), 100)
    clock.advance(50)
    expect(seen).toEqual([
      ['a', 1010],
      ['a2', 1010],
      ['b', 1020],
    ])
    expect(clock.now()).toBe(1050)
    expect(clock.pending()).toBe(1)
    expect(clock.nextDue()).toBe(1100)
  })

  it('fires timers set by callbacks inside the same window', () => {
    const clock = createManualClock()
    const seen: number[] = []
    clock.setTimeout(() => {
      seen.push(clock.now())
      clock.setTimeout(() => seen.push(clock.now()), 5)
    }, 5)
    clock.advance(10)
    expect(seen).toEqual([5, 10])
  })

  it('clearTimeout cancels; advance(0) fires zero-delay timers', () => {
    const clock = createManualClock()
    let fired = 0
    const h = clock.setTimeout(() => fired++, 0)
    clock.clearTimeout(h)
    clock.setTimeout(() => fired++, 0)
    clock.advance(0)
    expect(fired).toBe(1)
    expect(clock.pending()).toBe(0)
    expect(clock.nextDue()).toBeUndefined()
  })

  it('runAll fires everything, covering a day in no time', () => {
    const clock = createManualClock(0)
    const times: number[] = []
    const tick = () => {
      times.push(clock.now())
      if (times.length < 24) clock.setTimeout(tick, 3_600_000)
    }
    clock.setTimeout(tick, 3_600_000)
    expect(clock.runAll()).toBe(24)
    expect(clock.now()).toBe(86_400_000)
    expect(times).toHaveLength(24)
  })

  it('refuses to go backwards', () => {
    expect(() => createManualClock().advance(-1)).toThrow(RangeError)
  })
})

describe('systemClock', () => {
  it('reads the real time and sets real timers', async () => {
    expect(Math.abs(systemClock.now() - Date.now())).toBeLessThan(1000)
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 1))
    const h = systemClock.setTimeout(() => {
      throw new Error('must not fire')
    }, 5)
    systemClock.clearTimeout(h)
  })
})
