/**
 * `npm start` (scripts/start.mjs) says its build in one line: the size table and publint's
 * verdicts of the post-build check are for `npm start -- --verbose`. A real build is forced by
 * dropping one package's stamp (scripts/build-incremental.mjs then builds it and runs the check):
 * @agentmsg/storage-indexeddb, which no Node test imports built (vitest resolves sources).
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const STAMP = path.join(ROOT, '.tmp/build-stamps/storage-indexeddb.json')

it('npm start: one line for the build, no size table, then the demo', async () => {
  await rm(STAMP, { force: true })
  const home = await mkdtemp(path.join(tmpdir(), 'agentmsg-start-quiet-'))
  try {
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts/start.mjs')], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', AGENTMSG_HOME: home, AGENTMSG_DEMO_EXIT: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const before = stdout.slice(0, stdout.indexOf('\n▶'))
    expect(before).toBe(
      'build: built storage-indexeddb; sizes and publint checked (npm start -- --verbose shows them)\n',
    )
    expect(stdout).not.toMatch(/min\+gzip|publint \+|check-build|KB/)
    expect(stdout).toContain('relay listening on https://127.0.0.1:')
    // Built and checked for real: stamped again.
    expect(existsSync(STAMP)).toBe(true)
  } finally {
    await rm(home, { recursive: true, force: true })
  }
}, 600_000)
