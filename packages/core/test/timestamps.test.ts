import { describe, expect, it } from 'vitest'
import { isAgentMsgError } from '../src/errors.js'
import { formatTimestamp, isTimestamp, parseTimestamp } from '../src/timestamps.js'

const BASE = Date.UTC(2026, 10, 21, 22, 48, 1)

describe('parseTimestamp', () => {
  it.each([
    ['2026-11-21T22:48:01Z', BASE],
    ['2026-11-21T22:48:01.1Z', BASE + 100],
    ['2026-11-21T22:48:01.12Z', BASE + 120],
    ['2026-11-21T22:48:01.123Z', BASE + 123],
    ['2026-11-21T22:48:01.1239Z', BASE + 123],
    ['2026-11-21T22:48:01.123999999Z', BASE + 123],
    ['2026-11-21T22:48:01.000000000Z', BASE],
    ['1970-01-01T00:00:00Z', 0],
    ['1969-12-31T23:59:59.999Z', -1],
    ['2028-02-29T00:00:00Z', Date.UTC(2028, 1, 29)],
    ['2000-02-29T12:00:00Z', Date.UTC(2000, 1, 29, 12)],
    ['2026-12-31T23:59:59.999Z', Date.UTC(2026, 11, 31, 23, 59, 59, 999)],
    ['0000-01-01T00:00:00Z', -62_167_219_200_000],
    ['0099-06-15T00:00:00Z', -59_028_739_200_000],
    ['9999-12-31T23:59:59.999Z', 253_402_300_799_999],
  ])('accepts %s', (text, ms) => {
    expect(parseTimestamp(text)).toBe(ms)
    expect(isTimestamp(text)).toBe(true)
  })

  it('does not map years 0–99 to the 1900s as Date.UTC does', () => {
    expect(new Date(parseTimestamp('0099-06-15T00:00:00Z')).getUTCFullYear()).toBe(99)
  })

  it.each([
    ['lower-case t', '2026-11-21t22:48:01Z'],
    ['lower-case z', '2026-11-21T22:48:01z'],
    ['space separator', '2026-11-21 22:48:01Z'],
    ['+00:00 offset', '2026-11-21T22:48:01+00:00'],
    ['-00:00 offset', '2026-11-21T22:48:01-00:00'],
    ['offset and Z', '2026-11-21T22:48:01Z+00:00'],
    ['no zone', '2026-11-21T22:48:01'],
    ['leap second', '2016-12-31T23:59:60Z'],
    ['Feb 29 in a non-leap year', '2027-02-29T00:00:00Z'],
    ['Feb 29 in 1900 (not leap)', '1900-02-29T00:00:00Z'],
    ['Feb 30', '2028-02-30T00:00:00Z'],
    ['Apr 31', '2026-04-31T00:00:00Z'],
    ['month 00', '2026-00-10T00:00:00Z'],
    ['month 13', '2026-13-10T00:00:00Z'],
    ['day 00', '2026-01-00T00:00:00Z'],
    ['hour 24', '2026-01-01T24:00:00Z'],
    ['minute 60', '2026-01-01T23:60:00Z'],
    ['10 fraction digits', '2026-11-21T22:48:01.1234567890Z'],
    ['empty fraction', '2026-11-21T22:48:01.Z'],
    ['comma fraction', '2026-11-21T22:48:01,123Z'],
    ['no seconds', '2026-11-21T22:48Z'],
    ['date only', '2026-11-21'],
    ['five-digit year', '+02026-11-21T22:48:01Z'],
    ['one-digit month', '2026-1-21T22:48:01Z'],
    ['leading white space', ' 2026-11-21T22:48:01Z'],
    ['trailing newline', '2026-11-21T22:48:01Z\n'],
    ['non-ASCII digits', '２026-11-21T22:48:01Z'],
    ['empty', ''],
  ])('refuses %s', (_name, text) => {
    expect(isTimestamp(text)).toBe(false)
    expect(() => parseTimestamp(text, 'date')).toThrowError(/^date: /)
  })

  it('throws invalid_format naming the field', () => {
    try {
      parseTimestamp('2026-11-21T22:48:01+01:00', 'keys[0].retired_date')
      expect.unreachable()
    } catch (e) {
      expect(isAgentMsgError(e) && e.code).toBe('invalid_format')
      expect(isAgentMsgError(e) && e.field).toBe('keys[0].retired_date')
    }
  })

  it('refuses non-strings', () => {
    for (const x of [0, null, undefined, {}, new Date()]) {
      expect(isTimestamp(x)).toBe(false)
      expect(() => parseTimestamp(x as string)).toThrowError(/RFC 3339/)
    }
  })
})

describe('formatTimestamp', () => {
  it('always writes milliseconds', () => {
    expect(formatTimestamp(BASE)).toBe('2026-11-21T22:48:01.000Z')
    expect(formatTimestamp(BASE + 123)).toBe('2026-11-21T22:48:01.123Z')
    expect(formatTimestamp(new Date(BASE + 7))).toBe('2026-11-21T22:48:01.007Z')
    expect(formatTimestamp(0)).toBe('1970-01-01T00:00:00.000Z')
  })

  it('floors sub-millisecond parts, also before 1970', () => {
    expect(formatTimestamp(BASE + 123.9)).toBe('2026-11-21T22:48:01.123Z')
    expect(formatTimestamp(-0.5)).toBe('1969-12-31T23:59:59.999Z')
  })

  it('defaults to now', () => {
    const before = Date.now()
    const ms = parseTimestamp(formatTimestamp())
    expect(ms).toBeGreaterThanOrEqual(before)
    expect(ms).toBeLessThanOrEqual(Date.now())
  })

  it('round-trips through parseTimestamp', () => {
    for (const ms of [0, 1, -1, BASE + 999, 253_402_300_799_999, -62_167_219_200_000]) {
      expect(parseTimestamp(formatTimestamp(ms))).toBe(ms)
    }
  })

  it('refuses times the wire format cannot write', () => {
    expect(() => formatTimestamp(NaN)).toThrow(RangeError)
    expect(() => formatTimestamp(Infinity)).toThrow(RangeError)
    expect(() => formatTimestamp(253_402_300_800_000)).toThrow(RangeError)
    expect(() => formatTimestamp(-62_167_219_200_001)).toThrow(RangeError)
    expect(() => formatTimestamp(new Date(NaN))).toThrow(RangeError)
  })
})
