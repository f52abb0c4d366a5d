/**
 * The packages' weight stays where the consolidation and the hardening after it left it
 * (scripts/weight.mjs): at most 27,300 lines (21,300 of code) under packages/*\/src, no source
 * file over 300 lines, at most 276 exported names across every package's entries, core's root at
 * most 60 names and core at most 6 entries. A change that needs more says so here, in review,
 * rather than growing unnoticed.
 */
import { describe, expect, it } from 'vitest'
// @ts-expect-error: a plain ESM script, no declarations
import { LIMITS, measure, problems } from '../../scripts/weight.mjs'

describe('weight', () => {
  const weight = measure()

  it('is within the limits', () => {
    expect(problems(weight)).toEqual([])
  })

  it('counts what it claims: lines, names and core entries are measured, not zero', () => {
    expect(weight.lines).toBeGreaterThan(10_000)
    expect(weight.names).toBeGreaterThan(100)
    expect(weight.coreEntries).toBeGreaterThanOrEqual(5)
    expect(LIMITS.lines).toBe(28_050)
    expect(weight.codeLines).toBeGreaterThan(10_000)
    expect(LIMITS.codeLines).toBe(21_850)
  })
})
