// Wire timestamps (PROFILE §1): RFC 3339 UTC only. Not `Date.parse`, which reads offsets, leap
// seconds and `Feb 30` differently per engine: two verifiers must agree on a `date`.
import { invalidFormat } from './errors.js'

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
// Exactly 146 097 days: the Gregorian calendar repeats every 400 years.
const FOUR_CENTURIES_MS = 146_097 * 86_400_000
const MIN_MS = -62_167_219_200_000
const MAX_MS = 253_402_300_799_999

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
}

function toEpochMs(text: string): number | undefined {
  const m = TIMESTAMP.exec(text)
  if (m === null) return undefined
  const year = +m[1]!
  const month = +m[2]!
  const day = +m[3]!
  const hour = +m[4]!
  const minute = +m[5]!
  const second = +m[6]!
  if (month < 1 || month > 12 || day < 1) return undefined
  const monthDays = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!
  // Second 60 is refused: a leap second has no epoch-ms value of its own.
  if (day > monthDays || hour > 23 || minute > 59 || second > 59) return undefined
  // Digits past the millisecond are truncated, not rounded, so a value never moves forward.
  const ms = m[7] === undefined ? 0 : +m[7].slice(0, 3).padEnd(3, '0')
  if (year >= 100) return Date.UTC(year, month - 1, day, hour, minute, second, ms)
  // Date.UTC maps years 0–99 to 1900–1999; shift by four centuries and back instead.
  return Date.UTC(year + 400, month - 1, day, hour, minute, second, ms) - FOUR_CENTURIES_MS
}

/** A PROFILE §1 timestamp in epoch ms; fraction digits past the millisecond truncated. */
export function parseTimestamp(text: string, field?: string): number {
  const ms = typeof text === 'string' ? toEpochMs(text) : undefined
  if (ms === undefined) {
    throw invalidFormat(
      'must be an RFC 3339 UTC timestamp such as 2026-11-21T22:48:01.123Z (upper-case T and Z, no offset)',
      field,
    )
  }
  return ms
}

export function isTimestamp(text: unknown): text is string {
  return typeof text === 'string' && toEpochMs(text) !== undefined
}

/** A PROFILE §1 timestamp for writers: UTC, three fraction digits. */
export function formatTimestamp(time: number | Date = Date.now()): string {
  const ms = typeof time === 'number' ? time : time.getTime()
  if (!Number.isFinite(ms) || ms < MIN_MS || ms > MAX_MS) {
    throw new RangeError(`cannot format ${String(time)} as a four-digit-year UTC timestamp`)
  }
  // Floored: the Date constructor truncates toward zero, i.e. up, before 1970.
  return new Date(Math.floor(ms)).toISOString()
}

/** `691200001` → `8 d 0 h 0 min 0.001 s`: exact, for error messages. */
export function duration(ms: number): string {
  const parts: string[] = []
  let rest = ms
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['min', 60_000],
  ] as const) {
    const n = Math.floor(rest / size)
    if (n > 0 || parts.length > 0) parts.push(`${n} ${unit}`)
    rest -= n * size
  }
  parts.push(`${Number((rest / 1000).toFixed(3))} s`)
  return parts.join(' ')
}
