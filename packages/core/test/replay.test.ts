import { describe, expect, it } from 'vitest'
import { isAgentMsgError } from '../src/errors.js'
import type { Storage } from '../src/interfaces/storage.js'
import { ReplayGuard } from '../src/replay.js'
import { memoryStorage } from '../src/storage/memory.js'
import { formatTimestamp } from '../src/timestamps.js'

const MINUTE = 60_000
const DAY = 86_400_000
const T0 = Date.UTC(2026, 10, 21, 22, 48, 1, 123)

/** A guard on a settable clock. */
function setup(options: { storage?: Storage; maxEntries?: number } = {}) {
  const clock = { now: T0 }
  const guard = new ReplayGuard({ ...options, now: () => clock.now })
  return { clock, guard }
}

function message(
  id: string,
  overrides: { from?: string; date?: string; ttl_seconds?: number } = {},
) {
  return {
    from: { agent: overrides.from ?? 'https://alice.example' },
    message_id: id,
    date: overrides.date ?? formatTimestamp(T0),
    ...(overrides.ttl_seconds === undefined ? {} : { ttl_seconds: overrides.ttl_seconds }),
  }
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return isAgentMsgError(error) ? error.code : 'not an AgentMsgError'
  }
  return undefined
}

describe('ReplayGuard.checkFreshness', () => {
  const { guard } = setup()
  const at = (offsetMs: number) => ({ date: formatTimestamp(T0 + offsetMs) })

  it('accepts a date exactly 8 days old and refuses one 8 days + 1 ms old', () => {
    expect(codeOf(() => guard.checkFreshness(at(-8 * DAY)))).toBeUndefined()
    expect(codeOf(() => guard.checkFreshness(at(-8 * DAY - 1)))).toBe('stale_message')
  })

  it('accepts a date exactly 5 minutes ahead and refuses one 5 minutes + 1 ms ahead', () => {
    expect(codeOf(() => guard.checkFreshness(at(5 * MINUTE)))).toBeUndefined()
    expect(codeOf(() => guard.checkFreshness(at(5 * MINUTE + 1)))).toBe('stale_message')
  })

  it('says precisely why a date is stale', () => {
    expect(() => guard.checkFreshness(at(-8 * DAY - 1))).toThrow(
      /8 d 0 h 0 min 0\.001 s old; messages older than 8 d 0 h 0 min 0 s/,
    )
    expect(() => guard.checkFreshness(at(5 * MINUTE + 1))).toThrow(/5 min 0\.001 s in the future/)
  })

  it('accepts a message until date + ttl_seconds and refuses it 1 ms later', () => {
    const date = formatTimestamp(T0 - 60_000)
    expect(codeOf(() => guard.checkFreshness({ date, ttl_seconds: 60 }))).toBeUndefined()
    expect(codeOf(() => guard.checkFreshness({ date, ttl_seconds: 59 }))).toBe('stale_message')
    const justExpired = formatTimestamp(T0 - 60_001)
    expect(codeOf(() => guard.checkFreshness({ date: justExpired, ttl_seconds: 60 }))).toBe(
      'stale_message',
    )
    expect(() => guard.checkFreshness({ date: justExpired, ttl_seconds: 60 })).toThrow(
      /expired 0\.001 s ago/,
    )
  })

  it('refuses stale messages with status 400', () => {
    try {
      guard.checkFreshness(at(-9 * DAY))
      expect.unreachable()
    } catch (error) {
      expect(error).toMatchObject({ code: 'stale_message', status: 400, field: 'date' })
    }
  })

  it('reports a malformed date or ttl as invalid_format', () => {
    expect(codeOf(() => guard.checkFreshness({ date: '2026-11-21T22:48:01+00:00' }))).toBe(
      'invalid_format',
    )
    expect(codeOf(() => guard.checkFreshness({ date: 'yesterday' }))).toBe('invalid_format')
    for (const ttl of [0, -1, 1.5, NaN]) {
      expect(codeOf(() => guard.checkFreshness({ ...at(0), ttl_seconds: ttl }))).toBe(
        'invalid_format',
      )
    }
  })

  it('honours custom windows', () => {
    const guard = new ReplayGuard({ now: () => T0, maxAgeMs: 1000, maxFutureMs: 0 })
    expect(codeOf(() => guard.checkFreshness(at(-1000)))).toBeUndefined()
    expect(codeOf(() => guard.checkFreshness(at(-1001)))).toBe('stale_message')
    expect(codeOf(() => guard.checkFreshness(at(1)))).toBe('stale_message')
  })
})

describe('ReplayGuard duplicates', () => {
  it('reports a repeated (from, message_id) as duplicate', async () => {
    const { guard } = setup()
    expect(await guard.checkAndRemember(message('m1'))).toBe('new')
    expect(await guard.checkAndRemember(message('m1'))).toBe('duplicate')
    expect(await guard.checkAndRemember(message('m2'))).toBe('new')
    expect(await guard.isDuplicate('https://alice.example', 'm1')).toBe(true)
    expect(await guard.isDuplicate('https://alice.example', 'm3')).toBe(false)
  })

  it('treats the same id from another sender as new', async () => {
    const { guard } = setup()
    expect(await guard.checkAndRemember(message('m1', { from: 'https://alice.example' }))).toBe(
      'new',
    )
    expect(await guard.checkAndRemember(message('m1', { from: 'https://bob.example' }))).toBe('new')
    expect(await guard.checkAndRemember(message('m1', { from: 'bob' }))).toBe('new')
    expect(await guard.isDuplicate('https://carol.example', 'm1')).toBe(false)
  })

  it('does not confuse senders whose ids share a prefix or contain /', async () => {
    const { guard } = setup()
    await guard.remember('https://a.example/x', 'y')
    expect(await guard.isDuplicate('https://a.example', 'x/y')).toBe(false)
    expect(await guard.isDuplicate('https://a.example/x', 'y')).toBe(true)
  })

  it('checks freshness before duplicates, and remembers nothing for a stale message', async () => {
    const { guard } = setup()
    const stale = message('m1', { date: formatTimestamp(T0 - 9 * DAY) })
    await expect(guard.checkAndRemember(stale)).rejects.toMatchObject({ code: 'stale_message' })
    expect(await guard.isDuplicate('https://alice.example', 'm1')).toBe(false)
  })

  it('remember() makes an id a duplicate', async () => {
    const { guard } = setup()
    await guard.remember('https://alice.example', 'm9')
    expect(await guard.checkAndRemember(message('m9'))).toBe('duplicate')
  })

  it('yields exactly one new for concurrent calls with the same id', async () => {
    const { guard } = setup()
    const results = await Promise.all(
      Array.from({ length: 20 }, () => guard.checkAndRemember(message('same'))),
    )
    expect(results.filter((r) => r === 'new')).toHaveLength(1)
    expect(results.filter((r) => r === 'duplicate')).toHaveLength(19)
  })

  it('yields exactly one new for concurrent calls on a slow storage', async () => {
    const slow = slowStorage(memoryStorage(), 5)
    const { guard } = setup({ storage: slow })
    const results = await Promise.all([
      guard.checkAndRemember(message('same')),
      guard.checkAndRemember(message('same')),
      guard.checkAndRemember(message('other')),
      guard.checkAndRemember(message('same')),
    ])
    expect(results).toEqual(['new', 'duplicate', 'new', 'duplicate'])
  })

  it('lets a waiting call claim the id when the first write fails', async () => {
    const base = memoryStorage()
    let failNext = true
    const flaky: Storage = {
      ...base,
      name: 'flaky',
      async put(key, value, options) {
        await new Promise((r) => setTimeout(r, 5))
        if (failNext) {
          failNext = false
          throw new Error('disk full')
        }
        return base.put(key, value, options)
      },
    }
    const { guard } = setup({ storage: flaky })
    const [first, second] = await Promise.allSettled([
      guard.checkAndRemember(message('m1')),
      guard.checkAndRemember(message('m1')),
    ])
    expect(first).toMatchObject({ status: 'rejected' })
    expect(second).toEqual({ status: 'fulfilled', value: 'new' })
    expect(await base.list('replay/')).toHaveLength(1)
  })
})

describe('ReplayGuard expiry and persistence', () => {
  it('remembers an id for 8 days + 10 minutes, then forgets it', async () => {
    const { clock, guard } = setup()
    await guard.remember('https://alice.example', 'm1')
    clock.now = T0 + 8 * DAY + 10 * MINUTE - 1
    expect(await guard.isDuplicate('https://alice.example', 'm1')).toBe(true)
    clock.now = T0 + 8 * DAY + 10 * MINUTE
    expect(await guard.isDuplicate('https://alice.example', 'm1')).toBe(false)
  })

  it('catches a replay of a message as late as the date window allows', async () => {
    const { clock, guard } = setup()
    // Sent 5 minutes "ahead" and accepted at once; replayed at the last moment it is fresh.
    const msg = message('m1', { date: formatTimestamp(T0 + 5 * MINUTE) })
    expect(await guard.checkAndRemember(msg)).toBe('new')
    clock.now = T0 + 5 * MINUTE + 8 * DAY
    expect(await guard.checkAndRemember(msg)).toBe('duplicate')
    clock.now += 1
    await expect(guard.checkAndRemember(msg)).rejects.toMatchObject({ code: 'stale_message' })
  })

  it('persists ids: a new guard on the same storage sees them', async () => {
    const storage = memoryStorage()
    const first = setup({ storage })
    expect(await first.guard.checkAndRemember(message('m1'))).toBe('new')
    await first.guard.remember('bob', 'm2')
    expect(await storage.list('replay/')).toEqual([
      ['replay/bob/m2', T0 + 8 * DAY + 10 * MINUTE],
      ['replay/https%3A%2F%2Falice.example/m1', T0 + 8 * DAY + 10 * MINUTE],
    ])
    const second = setup({ storage })
    expect(await second.guard.checkAndRemember(message('m1'))).toBe('duplicate')
    expect(await second.guard.isDuplicate('bob', 'm2')).toBe(true)
    expect(await second.guard.isDuplicate('bob', 'm3')).toBe(false)
  })

  it('persisted ids also expire after 8 days + 10 minutes', async () => {
    const storage = memoryStorage()
    await setup({ storage }).guard.remember('bob', 'm1')
    const { clock, guard } = setup({ storage })
    clock.now = T0 + 8 * DAY + 10 * MINUTE
    expect(await guard.isDuplicate('bob', 'm1')).toBe(false)
  })

  it('prune removes expired ids from memory and storage, and keeps live ones', async () => {
    const storage = memoryStorage()
    const { clock, guard } = setup({ storage })
    await guard.remember('bob', 'old1')
    await guard.remember('bob', 'old2')
    clock.now = T0 + DAY
    await guard.remember('bob', 'young')
    clock.now = T0 + 8 * DAY + 10 * MINUTE
    expect(await guard.prune()).toBe(2)
    expect(guard.size).toBe(1)
    expect((await storage.list('replay/')).map(([k]) => k)).toEqual(['replay/bob/young'])
    expect(await guard.isDuplicate('bob', 'young')).toBe(true)
    expect(await guard.prune()).toBe(0)
  })

  it('prune also removes expired ids loaded from storage', async () => {
    const storage = memoryStorage()
    await setup({ storage }).guard.remember('bob', 'm1')
    const { clock, guard } = setup({ storage })
    clock.now = T0 + 9 * DAY
    expect(await guard.prune()).toBe(1)
    expect(await storage.list('replay/')).toEqual([])
  })

  it('ignores foreign values under the replay/ prefix', async () => {
    const storage = memoryStorage()
    await storage.put('replay/bob/m1', 'not a number')
    const { guard } = setup({ storage })
    expect(await guard.isDuplicate('bob', 'm1')).toBe(false)
    expect(await guard.checkAndRemember(message('m1', { from: 'bob' }))).toBe('new')
  })

  it('retries loading after a storage failure', async () => {
    const base = memoryStorage()
    await base.put('replay/bob/m1', T0 + DAY)
    let fail = true
    const flaky: Storage = {
      ...base,
      async list(prefix, options) {
        if (fail) throw new Error('not yet')
        return base.list(prefix, options)
      },
    }
    const { guard } = setup({ storage: flaky })
    await expect(guard.isDuplicate('bob', 'm1')).rejects.toThrow('not yet')
    fail = false
    expect(await guard.isDuplicate('bob', 'm1')).toBe(true)
  })
})

describe('ReplayGuard maxEntries', () => {
  it('refuses with unavailable + retryAfter instead of forgetting live ids', async () => {
    const { clock, guard } = setup({ maxEntries: 2 })
    await guard.checkAndRemember(message('m1'))
    clock.now = T0 + 30 * MINUTE
    await guard.checkAndRemember(message('m2'))
    const refused = guard.checkAndRemember(message('m3'))
    await expect(refused).rejects.toMatchObject({
      code: 'unavailable',
      status: 503,
      // m1 expires 8 d + 10 min after T0, i.e. 8 d − 20 min from now.
      retryAfter: (8 * DAY - 20 * MINUTE) / 1000,
    })
    // Nothing was forgotten and nothing was remembered.
    expect(await guard.checkAndRemember(message('m1'))).toBe('duplicate')
    expect(await guard.checkAndRemember(message('m2'))).toBe('duplicate')
    expect(await guard.isDuplicate('https://alice.example', 'm3')).toBe(false)
    expect(guard.size).toBe(2)
  })

  it('prunes expired ids to make room', async () => {
    const { clock, guard } = setup({ maxEntries: 2 })
    await guard.remember('bob', 'm1')
    clock.now = T0 + DAY
    await guard.remember('bob', 'm2')
    clock.now = T0 + 8 * DAY + 10 * MINUTE
    await expect(guard.remember('bob', 'm3')).resolves.toBeUndefined()
    expect(guard.size).toBe(2)
    expect(await guard.isDuplicate('bob', 'm2')).toBe(true)
    expect(await guard.isDuplicate('bob', 'm3')).toBe(true)
    await expect(guard.remember('bob', 'm4')).rejects.toMatchObject({ code: 'unavailable' })
  })

  it('counts concurrent claims against the bound', async () => {
    const { guard } = setup({ maxEntries: 3, storage: slowStorage(memoryStorage(), 5) })
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd', 'e'].map((id) => guard.checkAndRemember(message(id))),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3)
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(2)
    expect(guard.size).toBe(3)
  })

  it('remembering an id again does not need a new slot', async () => {
    const { guard } = setup({ maxEntries: 1 })
    await guard.remember('bob', 'm1')
    await expect(guard.remember('bob', 'm1')).resolves.toBeUndefined()
  })

  it('rejects nonsensical options', () => {
    expect(() => new ReplayGuard({ maxEntries: 0 })).toThrow(RangeError)
    expect(() => new ReplayGuard({ maxAgeMs: -1 })).toThrow(RangeError)
  })
})

/** Delays every operation of `storage` by `ms`, to widen race windows. */
function slowStorage(storage: Storage, ms: number): Storage {
  const delay = () => new Promise((r) => setTimeout(r, ms))
  return {
    name: 'slow',
    get: async (...args) => (await delay(), storage.get(...args)),
    put: async (...args) => (await delay(), storage.put(...args)),
    delete: async (...args) => (await delay(), storage.delete(...args)),
    batch: async (...args) => (await delay(), storage.batch(...args)),
    list: async (...args) => (await delay(), storage.list(...args)),
  }
}
