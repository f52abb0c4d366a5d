/** The receiver's bounded work queue (PROFILE §6 "202 → process"). */
import { describe, expect, it } from 'vitest'
import { WorkQueue } from '../src/receive/queue.js'
import { deferred } from './receive-helpers.js'

describe('work queue', () => {
  it('bounds reservations and queued work, and drains', async () => {
    const gate = deferred()
    const done: number[] = []
    const q = new WorkQueue<number>({
      capacity: 2,
      concurrency: 1,
      run: async (n) => {
        await gate.promise
        done.push(n)
      },
      onError: () => undefined,
    })
    expect(q.reserve()).toBe(true)
    expect(q.reserve()).toBe(true)
    expect(q.reserve()).toBe(false)
    q.push(1, true)
    q.release()
    expect(q.reserve()).toBe(true)
    q.push(2, true)
    expect(q.pending).toBe(2)
    expect(q.reserve()).toBe(false)
    const drained = q.drain()
    gate.resolve()
    await drained
    expect(done).toEqual([1, 2])
    expect(q.pending).toBe(0)
  })
})
