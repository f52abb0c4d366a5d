/**
 * `npm test`'s stage runner (scripts/test-stages.mjs) with stand-in stages in a scratch root:
 * without Chromium it says in one line how to get it, runs the other stages, leaves the browser
 * stage out and fails the run; a failing stage stops the run; the summary line ("N passed, N
 * failed") is printed every time. Chromium itself is never uninstalled: the path is a fake one.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain .mjs script, without types
import { checkChromium, runStages } from '../../scripts/test-stages.mjs'

const roots: string[] = []
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true })
})

/** A scratch root, and stand-in stages that leave a marker file (the vitest one, a report). */
function scratch() {
  const root = mkdtempSync(path.join(tmpdir(), 'agentmsg-npm-test-'))
  roots.push(root)
  mkdirSync(path.join(root, '.tmp'))
  const stage = (name: string, code = 0, browser = false) => ({
    name,
    command: process.execPath,
    args: ['-e', `require('fs').writeFileSync(${JSON.stringify(name)}, ''); process.exit(${code})`],
    browser,
  })
  const vitestReport = (testResults: unknown[] = []) => ({
    name: 'vitest',
    command: process.execPath,
    args: [
      '-e',
      `require('fs').writeFileSync('.tmp/vitest.json', JSON.stringify({ numPassedTests: 7, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0, numTotalTestSuites: 2, testResults: ${JSON.stringify(testResults)} }))`,
    ],
  })
  const vitest = vitestReport()
  // The environment of a machine without PostgreSQL (the CI one sets the URL).
  const env: Record<string, string | undefined> = { ...process.env }
  delete env.AGENTMSG_TEST_POSTGRES_URL
  const lines: string[] = []
  const log = (line: string) => void lines.push(line)
  return {
    root,
    stage,
    vitest,
    vitestReport,
    env,
    lines,
    log,
    ran: (name: string) => existsSync(path.join(root, name)),
  }
}

describe('npm test stages', () => {
  it('without Chromium: one line on how to install it, the other stages run, the browser stage does not', () => {
    const s = scratch()
    const fake = path.join(s.root, 'no-such-chromium')
    // A report of an earlier run is not counted as this one's.
    writeFileSync(path.join(s.root, '.tmp/playwright.json'), '{"stats":{"expected":99}}')
    const passed = runStages({
      stages: [s.stage('lint'), s.stage('build'), s.vitest, s.stage('playwright', 0, true)],
      root: s.root,
      env: s.env,
      chromium: fake,
      log: s.log,
    })
    expect(passed).toBe(false)
    const hint = s.lines.filter((l) => l.includes('Chromium not found'))
    expect(hint).toHaveLength(1)
    expect(hint[0]).toContain(fake)
    expect(hint[0]).toContain('apt-get install chromium')
    expect(hint[0]).toContain('CHROMIUM_PATH')
    expect(s.ran('lint') && s.ran('build')).toBe(true)
    expect(s.ran('playwright')).toBe(false)
    expect(s.lines).toContain(
      `\nvitest: 7 passed in 2 suites; playwright: not run (no Chromium at ${fake})`,
    )
    expect(s.lines.at(-1)).toBe('7 passed, 0 failed')
  })

  it('a failing stage stops the run, is named, and the summary line still ends it', () => {
    const s = scratch()
    const passed = runStages({
      stages: [s.stage('lint'), s.stage('build', 3), s.vitest, s.stage('playwright', 0, true)],
      root: s.root,
      env: s.env,
      chromium: process.execPath,
      log: s.log,
    })
    expect(passed).toBe(false)
    expect(s.ran('playwright')).toBe(false)
    expect(s.lines).toContain('stopped at build (exit 3)')
    expect(s.lines.at(-1)).toBe('0 passed, 0 failed')
  })

  it('with Chromium every stage runs and a clean run passes', () => {
    const s = scratch()
    expect(checkChromium(process.execPath)).toBeUndefined()
    const passed = runStages({
      stages: [s.stage('lint'), s.vitest, s.stage('playwright', 0, true)],
      root: s.root,
      env: s.env,
      chromium: process.execPath,
      log: s.log,
    })
    expect(passed).toBe(true)
    expect(s.ran('playwright')).toBe(true)
    expect(s.lines.some((l) => l.includes('Chromium not found'))).toBe(false)
    expect(s.lines.at(-1)).toBe('7 passed, 0 failed')
  })

  it('PostgreSQL: without the URL one line says its tests were not run and the run passes; with it they must have run', () => {
    const without = scratch()
    expect(
      runStages({
        stages: [without.vitest],
        root: without.root,
        env: without.env,
        log: without.log,
      }),
    ).toBe(true)
    expect(
      without.lines.filter((l) => l.startsWith('not run here: the PostgreSQL tests')),
    ).toHaveLength(1)

    const url = 'postgres://postgres@127.0.0.1:5432/test'
    const none = scratch()
    const env = { ...none.env, AGENTMSG_TEST_POSTGRES_URL: url }
    expect(runStages({ stages: [none.vitest], root: none.root, env, log: none.log })).toBe(false)
    expect(none.lines.some((l) => l.includes('no PostgreSQL test passed'))).toBe(true)

    const ran = scratch()
    const report = ran.vitestReport([
      {
        name: '/x/packages/relay/test/store-postgres.test.ts',
        assertionResults: [{ status: 'passed' }],
      },
    ])
    expect(runStages({ stages: [report], root: ran.root, env, log: ran.log })).toBe(true)
    expect(ran.lines).toContain(
      'PostgreSQL: 1 tests of the PostgreSQL store and relay nodes passed',
    )
  })
})
