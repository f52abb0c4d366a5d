import { describe, expect, it } from 'vitest'
import { createManualClock, systemClock } from '../src/clock.js'

describe('createManualClock', () => {
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
