/** Plain assertions and a check runner, for any test runner and a browser page. */
import { describeError } from '@agentmsg/core/http'

/** Throws `message` unless `condition` holds. */
export function ok(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message)
}

/** Strict deep equality of JSON-ish values (vitest's `toStrictEqual` for plain data). */
export function equal(actual: unknown, expected: unknown, label = ''): void {
  const problem = difference(actual, expected, '$')
  if (problem) {
    throw new Error(
      `${label ? `${label}: ` : ''}${problem}\n  actual:   ${show(actual)}\n  expected: ${show(expected)}`,
    )
  }
}

function difference(actual: unknown, expected: unknown, path: string): string | undefined {
  if (Object.is(actual, expected)) return undefined
  if (typeof actual !== 'object' || typeof expected !== 'object' || !actual || !expected) {
    return `${path}: ${show(actual)} !== ${show(expected)}`
  }
  if (Array.isArray(actual) !== Array.isArray(expected)) return `${path}: array vs non-array`
  if (Object.getPrototypeOf(actual) !== Object.getPrototypeOf(expected)) {
    return `${path}: different prototypes`
  }
  const a = actual as Record<string, unknown>
  const e = expected as Record<string, unknown>
  const [ak, ek] = [Object.keys(a), Object.keys(e)]
  if (ak.length !== ek.length || ak.some((k) => !Object.hasOwn(e, k))) {
    return `${path}: keys ${show(ak)} !== ${show(ek)}`
  }
  for (const k of ek) {
    const d = difference(a[k], e[k], `${path}.${k}`)
    if (d) return d
  }
  return undefined
}

/** Resolves with the rejection reason; throws if `promise` fulfils. */
export async function rejects(promise: Promise<unknown>, label = 'the promise'): Promise<unknown> {
  try {
    await promise
  } catch (err) {
    return err
  }
  throw new Error(`expected ${label} to reject, but it fulfilled`)
}

/** A value as JSON when it can be, else as a string. */
export function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The outcome of one check. */
export interface CheckResult {
  /** What was checked. */
  name: string
  /** Whether it held. */
  ok: boolean
  /** What went wrong, when it did not. */
  error?: string
}

/** A list of named checks, and the `it` that adds one (the order of adding is the order run). */
export function checkList<C>(): [Array<[string, C]>, (name: string, check: C) => void] {
  const list: Array<[string, C]> = []
  return [list, (name, check) => void list.push([name, check])]
}

/** Run each check (`only` these) with `run`; a failing check is reported, not thrown. */
export async function runChecks<C>(
  checks: Array<[string, C]>,
  only: readonly string[] | undefined,
  run: (check: C) => Promise<void>,
): Promise<CheckResult[]> {
  const results: CheckResult[] = []
  for (const [name, check] of checks) {
    if (only && !only.includes(name)) continue
    try {
      await run(check)
      results.push({ name, ok: true })
    } catch (err) {
      results.push({ name, ok: false, error: describeError(err) })
    }
  }
  return results
}
