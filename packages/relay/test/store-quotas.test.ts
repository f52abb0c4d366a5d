/** The relay store's quotas (PROFILE §9 defaults). */
import { describe, expect, it } from 'vitest'
import { resolveQuota } from '../src/store/common.js'

describe('quotas', () => {
  it('default to 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB in all, 5% of it per client address', () => {
    expect(resolveQuota(undefined)).toEqual({
      messages: 10_000,
      bytes: 256 * 1024 * 1024,
      senderMessages: 2_500,
      senderBytes: 64 * 1024 * 1024,
      totalBytes: 10 * 1024 * 1024 * 1024,
      bucketBytes: 512 * 1024 * 1024,
    })
    expect(resolveQuota({ totalBytes: 512 * 1024 * 1024 }).bucketBytes).toBe(26_843_545)
    expect(resolveQuota({ totalBytes: 1000, bucketBytes: 1000 }).bucketBytes).toBe(1000)
    expect(resolveQuota({ messages: 100, bytes: 4000 })).toMatchObject({
      senderMessages: 25,
      senderBytes: 1000,
    })
    expect(() => resolveQuota({ totalBytes: -1 })).toThrow(RangeError)
  })
})
