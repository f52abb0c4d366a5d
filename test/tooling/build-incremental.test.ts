/**
 * scripts/build-incremental.mjs (the build of `npm start`) in a sandbox repository: the real
 * script, tsup.config.ts and tsconfig.base.json copied beside three tiny packages (beta depends
 * on alpha, gamma on nothing), node_modules linked to the repository's. Real tsup runs. What
 * was built or skipped is read from the script's own lines and its stamps, and confirmed by the
 * dist files' modification times (a skipped package's files are the same files), never by time.
 */
import { spawnSync } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
let box: string

async function write(file: string, content: string) {
  await mkdir(path.dirname(path.join(box, file)), { recursive: true })
  await writeFile(path.join(box, file), content)
}

async function pkg(name: string, source: string, dependencies: Record<string, string> = {}) {
  await write(
    `packages/${name}/package.json`,
    JSON.stringify({
      name: `@sandbox/${name}`,
      version: '0.0.0',
      type: 'module',
      exports: {
        '.': {
          '@agentmsg/source': './src/index.ts',
          types: './dist/index.d.ts',
          default: './dist/index.js',
        },
      },
      files: ['dist'],
      dependencies,
    }),
  )
  await write(`packages/${name}/src/index.ts`, source)
}

/** Run the script in the sandbox; its stdout lines and exit status. */
function build(...args: string[]) {
  const r = spawnSync(
    process.execPath,
    [path.join(box, 'scripts/build-incremental.mjs'), ...args],
    {
      cwd: box,
      encoding: 'utf8',
    },
  )
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('build:'))
  return { status: r.status, lines, stderr: r.stderr }
}

const mtime = async (name: string) =>
  (await stat(path.join(box, `packages/${name}/dist/index.js`))).mtimeMs
const stamp = async (name: string) =>
  JSON.parse(await readFile(path.join(box, `.tmp/build-stamps/${name}.json`), 'utf8')) as {
    inputs: string
    outputs: Array<[string, number, number]>
  }

beforeAll(async () => {
  box = await mkdtemp(path.join(tmpdir(), 'agentmsg-build-box-'))
  for (const f of ['tsup.config.ts', 'tsconfig.base.json', 'scripts/build-incremental.mjs']) {
    await mkdir(path.dirname(path.join(box, f)), { recursive: true })
    await copyFile(path.join(ROOT, f), path.join(box, f))
  }
  await symlink(path.join(ROOT, 'node_modules'), path.join(box, 'node_modules'), 'dir')
  await write('package.json', JSON.stringify({ private: true, type: 'module' }))
  await pkg('alpha', 'export const alpha = 1\n')
  await pkg('beta', 'export const beta = 2\n', { '@sandbox/alpha': '0.0.0' })
  await pkg('gamma', 'export const gamma = 3\n')
})

afterAll(async () => {
  if (box) await rm(box, { recursive: true, force: true })
})

it('builds each package once, skips unchanged ones, rebuilds a changed one and its dependents', async () => {
  const first = build('--no-check')
  expect(first.stderr).not.toMatch(/agentmsg:/)
  expect(first.status).toBe(0)
  for (const name of ['alpha', 'beta', 'gamma']) {
    expect(first.lines).toContain(`build: building ${name}: never built by this script`)
    expect(first.lines.some((l) => l.startsWith(`build: built ${name} (`))).toBe(true)
    expect((await stamp(name)).outputs.map(([file]) => file)).toEqual(['index.d.ts', 'index.js'])
  }
  const built = {
    alpha: await mtime('alpha'),
    beta: await mtime('beta'),
    gamma: await mtime('gamma'),
  }

  // The second start: nothing changed, nothing built, the very same dist files.
  const second = build('--no-check')
  expect(second.status).toBe(0)
  expect(second.lines).toEqual(['build: all 3 packages unchanged since their last build, skipped'])
  expect({
    alpha: await mtime('alpha'),
    beta: await mtime('beta'),
    gamma: await mtime('gamma'),
  }).toEqual(built)

  // alpha's source changes: alpha and beta (which depends on it) build again, gamma does not.
  const before = await stamp('alpha')
  await write('packages/alpha/src/index.ts', 'export const alpha = 42\n')
  const third = build('--no-check')
  expect(third.status).toBe(0)
  expect(third.lines).toContain('build: unchanged, skipped: gamma')
  expect(third.lines).toContain('build: building alpha: sources changed')
  expect(third.lines).toContain('build: building beta: sources changed')
  expect((await stamp('alpha')).inputs).not.toBe(before.inputs)
  expect(await readFile(path.join(box, 'packages/alpha/dist/index.js'), 'utf8')).toContain('42')
  expect(await mtime('gamma')).toBe(built.gamma)
  expect(await mtime('alpha')).not.toBe(built.alpha)

  // A dist/ changed behind the script's back (a full `npm run build`, a deletion) is rebuilt.
  await rm(path.join(box, 'packages/gamma/dist/index.js'))
  const fourth = build('--no-check')
  expect(fourth.status).toBe(0)
  expect(fourth.lines).toContain('build: unchanged, skipped: alpha, beta')
  expect(fourth.lines).toContain('build: building gamma: dist/ changed since')
  expect(await readFile(path.join(box, 'packages/gamma/dist/index.js'), 'utf8')).toContain('3')
}, 240_000)

it('a package that fails to build: one error line, exit 1, and it is built again next time', async () => {
  await write('packages/gamma/src/index.ts', 'export const gamma = (\n')
  const failed = build('--no-check')
  expect(failed.status).toBe(1)
  expect(failed.stderr).toMatch(/^agentmsg: build_failed: gamma: .*\(see tsup's output above\)$/m)
  await write('packages/gamma/src/index.ts', 'export const gamma = 4\n')
  const again = build('--no-check')
  expect(again.status).toBe(0)
  expect(again.lines).toContain('build: unchanged, skipped: alpha, beta')
  expect(again.lines.some((l) => l.startsWith('build: building gamma: '))).toBe(true)
}, 240_000)

it('--stamp after a full tsup build: the next run builds nothing', async () => {
  // A full `tsup` (what `npm run build` runs) rewrites every dist/: unstamped, all build again.
  const fullTsup = () =>
    spawnSync(process.execPath, [path.join(box, 'node_modules/tsup/dist/cli-default.js')], {
      cwd: box,
    }).status
  expect(fullTsup()).toBe(0)
  const stale = build('--no-check')
  expect(stale.lines.filter((l) => l.startsWith('build: building'))).toHaveLength(3)
  // Followed by --stamp, the next run takes its dist/ as built.
  const built = await mtime('alpha')
  expect(fullTsup()).toBe(0)
  expect(await mtime('alpha')).not.toBe(built)
  expect(build('--stamp').lines).toEqual(['build: stamped 3 packages (.tmp/build-stamps)'])
  expect(build('--no-check').lines).toEqual([
    'build: all 3 packages unchanged since their last build, skipped',
  ])
}, 240_000)

it('an unknown option is a usage error', () => {
  const r = build('--fast')
  expect(r.status).toBe(2)
  expect(r.stderr).toBe('agentmsg: usage: unknown option --fast (known: --no-check, --stamp)\n')
})
