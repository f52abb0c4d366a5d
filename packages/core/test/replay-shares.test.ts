/**
 * Per-address shares of the replay guard (1M ids) and the relay's nonce memory (500k pairs):
 * a few client-address buckets cannot fill them and make them refuse everyone (PROFILE §6).
 * The attack through a real inbox is in transport-https/test/attack-replay-share.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { isAgentMsgError } from '../src/errors.js'
import { NonceMemory } from '../src/http-signature/nonces.js'
import type { Storage } from '../src/interfaces/storage.js'
import { ReplayGuard } from '../src/replay.js'
import { memoryStorage } from '../src/storage/memory.js'
import { formatTimestamp } from '../src/timestamps.js'

const T0 = Date.UTC(2026, 10, 21, 22, 48, 1, 123)
const DAY = 86_400_000

function message(id: string, from = 'https://alice.example', at = T0) {
  return { from: { agent: from }, message_id: id, date: formatTimestamp(at) }
}

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
  } catch (error) {
    return isAgentMsgError(error) ? error.code : 'not an AgentMsgError'
  }
  return undefined
}

describe('ReplayGuard shares', () => {
  it('by default binds a share only once the guard is half full', async () => {
    const guard = new ReplayGuard({ maxEntries: 16, maxEntriesPerBucket: 2, now: () => T0 })
    // One busy address alone may use the room nobody else needs: up to half the guard.
    for (let i = 0; i < 8; i++)
      expect(await guard.checkAndRemember(message(`a${i}`), 'A')).toBe('new')
    expect(await code(guard.checkAndRemember(message('a8'), 'A'))).toBe('rate_limited')
    // Half full: everyone else still gets a share, and no more.
    expect(await guard.checkAndRemember(message('b0'), 'B')).toBe('new')
    expect(await guard.checkAndRemember(message('b1'), 'B')).toBe('new')
    expect(await code(guard.checkAndRemember(message('b2'), 'B'))).toBe('rate_limited')
    expect(await guard.checkAndRemember(message('c0'), 'C')).toBe('new')
  })

  it('refuses a shareThreshold outside 0..1', () => {
    expect(() => new ReplayGuard({ shareThreshold: 1.5 })).toThrow(RangeError)
  })

  it('defaults each bucket to 1/16 of maxEntries', async () => {
    const guard = new ReplayGuard({ maxEntries: 32, shareThreshold: 0, now: () => T0 })
    expect(await guard.checkAndRemember(message('a'), 'A')).toBe('new')
    expect(await guard.checkAndRemember(message('b'), 'A')).toBe('new')
    expect(await code(guard.checkAndRemember(message('c'), 'A'))).toBe('rate_limited')
  })

  it('refuses a full bucket alone (429 with Retry-After), not other buckets or unbucketed ids', async () => {
    const clock = { now: T0 }
    const guard = new ReplayGuard({
      maxEntries: 10,
      maxEntriesPerBucket: 3,
      shareThreshold: 0,
      now: () => clock.now,
    })
    for (const id of ['1', '2', '3'])
      expect(await guard.checkAndRemember(message(id), 'A')).toBe('new')
    let refusal: unknown
    try {
      await guard.checkAndRemember(message('4'), 'A')
    } catch (error) {
      refusal = error
    }
    expect(isAgentMsgError(refusal) && refusal.code).toBe('rate_limited')
    expect(isAgentMsgError(refusal) && refusal.retryAfter).toBeGreaterThanOrEqual(1)
    // The refused id was not remembered: a later try may still take it.
    expect(await guard.isDuplicate('https://alice.example', '4')).toBe(false)
    // Known ids stay duplicates, whatever the bucket.
    expect(await guard.checkAndRemember(message('1'), 'A')).toBe('duplicate')
    expect(await guard.checkAndRemember(message('1'), 'B')).toBe('duplicate')
    expect(await guard.checkAndRemember(message('5'), 'B')).toBe('new')
    expect(await guard.checkAndRemember(message('6'))).toBe('new')
    await guard.remember('https://alice.example', '7', 'C')
    expect(guard.size).toBe(6)
  })

  it('gives a bucket its slots back when its ids expire', async () => {
    const clock = { now: T0 }
    const guard = new ReplayGuard({
      maxEntries: 10,
      maxEntriesPerBucket: 2,
      shareThreshold: 0,
      retentionMs: 9 * DAY,
      now: () => clock.now,
    })
    await guard.checkAndRemember(message('1'), 'A')
    await guard.checkAndRemember(message('2'), 'A')
    expect(await code(guard.checkAndRemember(message('3'), 'A'))).toBe('rate_limited')
    clock.now += 9 * DAY + 1
    expect(await guard.checkAndRemember(message('3', undefined, clock.now), 'A')).toBe('new')
    expect(await guard.checkAndRemember(message('4', undefined, clock.now), 'A')).toBe('new')
    expect(await code(guard.checkAndRemember(message('5', undefined, clock.now), 'A'))).toBe(
      'rate_limited',
    )
  })

  it('concurrent claims of one bucket cannot overshoot its share', async () => {
    const guard = new ReplayGuard({
      maxEntries: 100,
      maxEntriesPerBucket: 3,
      shareThreshold: 0,
      now: () => T0,
    })
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        guard.checkAndRemember(message(`m${i}`), 'A').then(
          (r) => r,
          (e: unknown) => (isAgentMsgError(e) ? e.code : 'other'),
        ),
      ),
    )
    expect(results.filter((r) => r === 'new')).toHaveLength(3)
    expect(results.filter((r) => r === 'rate_limited')).toHaveLength(7)
  })

  it('a failed write gives the slot back', async () => {
    const inner = memoryStorage()
    let fail = true
    const storage: Storage = {
      ...inner,
      get: (k) => inner.get(k),
      list: (p) => inner.list(p),
      batch: (ops) => inner.batch(ops),
      delete: (k) => inner.delete(k),
      put: async (k, v) => {
        if (fail) throw new Error('disk full')
        return inner.put(k, v)
      },
    }
    const guard = new ReplayGuard({
      storage,
      maxEntries: 10,
      maxEntriesPerBucket: 1,
      shareThreshold: 0,
      now: () => T0,
    })
    await expect(guard.checkAndRemember(message('1'), 'A')).rejects.toThrow('disk full')
    fail = false
    expect(await guard.checkAndRemember(message('1'), 'A')).toBe('new')
  })
})

describe('NonceMemory shares', () => {
  it('defaults each bucket to 1/64 of maxEntries, above the default per-address rate', () => {
    const nonces = new NonceMemory({ now: () => 0 })
    for (let i = 0; i < 7812; i++) nonces.checkAndRemember('k', `n${i}`, 0, 'A')
    expect(() => nonces.checkAndRemember('k', 'one-more', 0, 'A')).toThrow(/this address/)
    expect(nonces.checkAndRemember('k', 'one-more', 0, 'B')).toBe('fresh')
  })

  it('refuses a full bucket alone with 429 until its pairs expire', () => {
    const nonces = new NonceMemory({ maxEntries: 100, maxEntriesPerBucket: 2, retentionMs: 1000 })
    expect(nonces.checkAndRemember('k', 'a', 0, 'A')).toBe('fresh')
    expect(nonces.checkAndRemember('k', 'b', 500, 'A')).toBe('fresh')
    let refusal: unknown
    try {
      nonces.checkAndRemember('k', 'c', 600, 'A')
    } catch (error) {
      refusal = error
    }
    expect(isAgentMsgError(refusal) && refusal.code).toBe('rate_limited')
    expect(isAgentMsgError(refusal) && refusal.retryAfter).toBe(1)
    // A replay is still a replay; other buckets and unbucketed pairs go on.
    expect(nonces.checkAndRemember('k', 'a', 600, 'A')).toBe('replay')
    expect(nonces.checkAndRemember('k', 'c', 600, 'B')).toBe('fresh')
    expect(nonces.checkAndRemember('k', 'd', 600)).toBe('fresh')
    // The first pair expired: its slot is the bucket's again.
    expect(nonces.checkAndRemember('k', 'e', 1001, 'A')).toBe('fresh')
  })
})
