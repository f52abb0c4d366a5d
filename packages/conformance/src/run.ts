/** Running named checks without a test runner, and what each one reports. */
import { describeError } from '@agentmsg/core/http'

/** The outcome of one check. */
export interface CheckResult {
  name: string
  ok: boolean
  error?: string
}

/** A list of named checks, and the `it` that adds one (the order of adding is the order run). */
export function checkList<C>(): [Array<[string, C]>, (name: string, check: C) => void] {
  const list: Array<[string, C]> = []
  return [list, (name, check) => void list.push([name, check])]
}

/** Run each check (all, or `only` these names) with `run`; a failing check is reported, not thrown. */
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
