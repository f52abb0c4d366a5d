/**
 * Every README example runs as written. Each ```ts/```js block of every README (found by
 * ./readme-blocks.ts, so a new block cannot escape) is executed: on Node here, as its own
 * program in a child process (`node --import tsx`, the packages resolved to their sources as in
 * the rest of the vitest suite) with a scratch working directory inside the repository, so the
 * `./alice` or `./relay-data` an example names lands in `.tmp/`; in Chromium, for the blocks that
 * need a browser, by test/browser/readme-quickstart.spec.ts. Examples talk to real parts they
 * start themselves (relays and inboxes on loopback with a development CA), never to
 * `https://relay.example`. What an example's comments promise is checked against what it
 * printed, where a comment promises something.
 */
import { spawn, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as core from '../../packages/core/src/index.js'
import { npmShell, readmeLinkCommand } from '../tooling/packed.js'
import {
  allBlocks,
  fences,
  PRINTS,
  type ReadmeBlock,
  readmeBlocks,
  readmes,
  repoRoot,
  testedReadmes,
} from './readme-blocks.js'

/**
 * How a README's Node blocks form programs: `'one'` (the default) joins them into one program,
 * in order, as a reader follows the page; `'section'` joins the blocks of each section (a page
 * of independent examples, one per section); `'each'` runs every block alone (independent
 * examples); `'vitest'` joins them into a vitest test file, imported into this one as it is
 * collected (its examples define tests: the conformance suites).
 */
const PROGRAMS: Record<string, 'one' | 'section' | 'each' | 'vitest'> = {
  'README.md': 'each',
  'packages/client/README.md': 'section',
  'packages/conformance/README.md': 'vitest',
}

const DONE = 'readme example: done'

/** Write `code` to a scratch directory inside the repository (so packages resolve). */
function scratchFile(name: string, code: string, file = 'example.ts'): string {
  const scratch = path.join(repoRoot, '.tmp')
  mkdirSync(scratch, { recursive: true })
  const dir = mkdtempSync(path.join(scratch, `readme-${name.replace(/[^a-z0-9]+/gi, '-')}-`))
  writeFileSync(path.join(dir, file), code)
  return path.join(dir, file)
}

/** Run `code` as a program in a scratch directory; resolves with its stdout lines. */
async function runProgram(name: string, code: string): Promise<string[]> {
  const file = scratchFile(name, `${code}\nconsole.log(${JSON.stringify(DONE)})\n`)
  const dir = path.dirname(file)
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=@agentmsg/source', file],
    { cwd: dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve))
  const lines = stdout.split('\n').filter((l) => l !== '')
  // A program that ends by itself, having run to its last line, is one that runs as written.
  if (status !== 0 || lines.at(-1) !== DONE) {
    throw new Error(`${name} (${file}) exited ${status}:\n${stdout}\n${stderr}`)
  }
  rmSync(dir, { recursive: true, force: true })
  return lines.slice(0, -1)
}

/** The Node programs of one README: each a list of blocks. */
function programs(readme: string): ReadmeBlock[][] {
  const blocks = readmeBlocks(readme).filter((b) => b.runtime === 'node')
  if (blocks.length === 0 || PROGRAMS[readme] === 'vitest') return []
  if (PROGRAMS[readme] === 'each') return blocks.map((b) => [b])
  if (PROGRAMS[readme] !== 'section') return [blocks]
  const sections = new Map<string, ReadmeBlock[]>()
  for (const b of blocks) sections.set(b.section, [...(sections.get(b.section) ?? []), b])
  return [...sections.values()]
}

// The README examples that are vitest suites register their tests in this file, now.
for (const readme of testedReadmes().filter((r) => PROGRAMS[r] === 'vitest')) {
  const code = readmeBlocks(readme)
    .map((b) => b.code)
    .join('\n')
  const file = scratchFile(readme, `${code}\nexport const done = true\n`, 'example.test.ts')
  const mod = (await import(/* @vite-ignore */ file)) as { done?: boolean }
  if (mod.done !== true) throw new Error(`${readme}: its example did not run to the end`)
  rmSync(path.dirname(file), { recursive: true, force: true })
}

describe('README examples', () => {
  it('finds the blocks of every README', () => {
    expect(testedReadmes()).toContain('README.md')
    expect(testedReadmes()).toContain('packages/core/README.md')
    expect(testedReadmes()).toContain('packages/cli/README.md')
    // Every code fence has a language: an unlabelled ts example would slip past the runner.
    for (const readme of testedReadmes()) {
      for (const f of fences(readme)) {
        if (f.lang === '')
          expect(f.code, `${readme}: unlabelled fence`).not.toMatch(/\bimport\b|\bawait\b/)
      }
    }
    const browser = allBlocks().filter((b) => b.runtime === 'browser')
    // The browser ones are run by the Playwright spec, which finds them the same way.
    expect(browser.map((b) => b.readme)).toEqual([
      'README.md',
      'packages/storage-indexeddb/README.md',
    ])
    expect(existsSync(path.join(repoRoot, 'test/browser/readme-quickstart.spec.ts'))).toBe(true)
    // Every promise about output belongs to a program that runs (block numbers shift when a
    // block is added above).
    const starts = testedReadmes().flatMap((r) => programs(r).map((p) => `${r}#${p[0]!.index}`))
    for (const key of Object.keys(PRINTS)) expect(starts).toContain(key)
  })

  for (const readme of testedReadmes()) {
    for (const blocks of programs(readme)) {
      const first = blocks[0]!
      const name = `${readme}#${first.index}`
      it(`${name} (${first.section || 'top'}) runs as written`, { timeout: 90_000 }, async () => {
        const lines = await runProgram(name, blocks.map((b) => b.code).join('\n'))
        // Each promised line, in any order (a message may be handled before or after the
        // sender's receipt is printed).
        const rest = [...lines]
        for (const expected of PRINTS[name] ?? []) {
          const found = rest.indexOf(expected)
          expect(
            found,
            `${name} printed ${JSON.stringify(expected)}:\n${lines.join('\n')}`,
          ).toBeGreaterThanOrEqual(0)
          rest.splice(found, 1)
        }
      })
    }
  }
})

describe('README examples on a busy port', () => {
  // The examples listening on a fixed port: when it is taken, one line says which and what to
  // do (serveHttps's listen error, printed as its message), never a stack.
  for (const [readme, port] of [
    ['packages/client/README.md', 8455],
    ['packages/transport-https/README.md', 8449],
  ] as const) {
    it(`${readme}: port ${port} in use → one line`, { timeout: 90_000 }, async () => {
      const code = programs(readme)[0]!
        .map((b) => b.code)
        .join('\n')
      expect(code).toContain(`port: ${port}`)
      const holder = createServer()
      await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve))
      try {
        const file = scratchFile(`${readme}-busy`, code)
        const r = spawnSync(
          process.execPath,
          ['--import', 'tsx', '--conditions=@agentmsg/source', file],
          { cwd: path.dirname(file), encoding: 'utf8' },
        )
        rmSync(path.dirname(file), { recursive: true, force: true })
        expect(r.status).toBe(1)
        expect(r.stderr).toBe(
          `127.0.0.1:${port} is already in use: stop the process listening there, or pick another port\n`,
        )
      } finally {
        await new Promise((resolve) => holder.close(resolve))
      }
    })
  }
})

/**
 * `agentmsg` made a command the way the root README says for a clone (its `npm link` line), with
 * npm's global prefix in a temporary directory whose bin goes first on PATH; commands run from
 * a directory outside the repository, as a reader's would.
 */
const linked = {
  prefix: '',
  cwd: '',
  env: {} as NodeJS.ProcessEnv,
}

/** Run `agentmsg <args>` from PATH (`env` added); its exit code, stdout and stderr. */
async function cli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('agentmsg', args, { cwd: linked.cwd, env: { ...linked.env, ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stdout, stderr }
}

/** The shell lines of `readmes` (continuations joined, comments removed). */
function shellLines(readmes: string[]): Array<{ readme: string; section: string; line: string }> {
  return readmes.flatMap((readme) =>
    fences(readme)
      .filter((f) => f.lang === 'sh' || f.lang === 'bash')
      .flatMap((f) =>
        f.code
          .replace(/\\\n\s*/g, ' ')
          .split('\n')
          .map((line) => ({ readme, section: f.section, line: line.replace(/#.*/, '').trim() })),
      )
      .filter((l) => l.line !== ''),
  )
}

/** Each `agentmsg <command> …` of a line, with the flags it gives (up to a pipe or `)`). */
function agentmsgCalls(line: string): Array<{ command: string; flags: string[] }> {
  return [...line.matchAll(/\bagentmsg (--help|[a-z][a-z-]*)([^|;&)]*)/g)].map((m) => ({
    command: m[1]!,
    flags: [...m[2]!.matchAll(/(?<=\s)--[a-z][a-z-]*/g)].map((f) => f[0]),
  }))
}

describe('README shell blocks', () => {
  // What they name must exist: npm scripts, agentmsg commands and their flags (the CLI README's
  // too). The root README's CLI block runs as written, all but its servers.
  const lines = shellLines(readmes())

  beforeAll(async () => {
    linked.prefix = await mkdtemp(path.join(tmpdir(), 'agentmsg-link-'))
    linked.cwd = await mkdtemp(path.join(tmpdir(), 'agentmsg-cli-blocks-'))
    const bin = path.join(linked.prefix, 'bin')
    linked.env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` }
    await npmShell(readmeLinkCommand(), repoRoot, { npm_config_prefix: linked.prefix })
  }, 120_000)

  afterAll(async () => {
    for (const dir of [linked.prefix, linked.cwd])
      if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('names npm scripts that package.json has', () => {
    const scripts = Object.keys(
      JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).scripts as object,
    )
    const named = lines.flatMap(({ readme, line }) =>
      [...line.matchAll(/\bnpm (?:run (\S+)|(start|test)\b)/g)].map((m) => ({
        readme,
        script: m[1] ?? m[2],
      })),
    )
    expect(named.length).toBeGreaterThan(0)
    for (const { readme, script } of named)
      expect(scripts, `${readme}: npm run ${script}`).toContain(script)
  })

  it("the README's npm link puts this clone's agentmsg on PATH", { timeout: 30_000 }, async () => {
    const which = spawnSync('sh', ['-c', 'command -v agentmsg'], {
      cwd: linked.cwd,
      env: linked.env,
      encoding: 'utf8',
    })
    expect(which.stdout.trim()).toBe(path.join(linked.prefix, 'bin', 'agentmsg'))
    expect(realpathSync(which.stdout.trim())).toBe(
      path.join(realpathSync(repoRoot), 'packages/cli/bin/agentmsg.js'),
    )
    const version = JSON.parse(
      readFileSync(path.join(repoRoot, 'packages/cli/package.json'), 'utf8'),
    ).version
    expect(await cli(['--version'])).toMatchObject({ code: 0, stdout: `${version}\n` })

    // What it runs is the build once there is one (npm test builds first), else the sources:
    // a module hook names the CLI modules Node resolves.
    const hooks = path.join(linked.cwd, 'hooks.mjs')
    writeFileSync(
      hooks,
      'export async function resolve(s, c, next) { const r = await next(s, c);' +
        " if (r.url.includes('/packages/cli/')) process.stderr.write('cli module ' + r.url + '\\n'); return r }",
    )
    const register = path.join(linked.cwd, 'register.mjs')
    writeFileSync(
      register,
      `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`,
    )
    const traced = await cli(['--version'], { NODE_OPTIONS: `--import=${register}` })
    const built = existsSync(path.join(repoRoot, 'packages/cli/dist/cli.js'))
    const entry = built ? 'packages/cli/dist/cli.js' : 'packages/cli/src/cli.ts'
    const url = pathToFileURL(path.join(realpathSync(repoRoot), entry)).href
    expect(traced.stderr).toContain(`cli module ${url}`)
  })

  it('names agentmsg commands that the CLI has, with flags it takes', {
    timeout: 60_000,
  }, async () => {
    const calls = lines.flatMap(({ readme, line }) =>
      agentmsgCalls(line).map((call) => ({ readme, line, ...call })),
    )
    expect(calls.length).toBeGreaterThan(0)
    const help = new Map<string, string>()
    for (const { readme, line, command, flags } of calls) {
      let usage = help.get(command)
      if (usage === undefined) {
        const r = await cli(command === '--help' ? ['--help'] : [command, '--help'])
        expect(r.code, `${readme}: agentmsg ${command} --help`).toBe(0)
        help.set(command, (usage = r.stdout))
      }
      for (const flag of flags) expect(usage, `${readme}: ${line}: ${flag}`).toContain(flag)
    }
  })

  it("runs the root README's CLI block as written, but for its servers", {
    timeout: 30_000,
  }, async () => {
    const block = lines.filter((l) => l.readme === 'README.md' && l.section === 'CLI')
    const SERVERS = new Set(['relay', 'listen', 'inbox'])
    const run = block.filter((l) => !SERVERS.has(agentmsgCalls(l.line)[0]?.command ?? ''))
    expect(run.map((l) => l.line)).toEqual(['agentmsg init  --dir ./alice', 'agentmsg --help'])
    for (const { line } of run) {
      const r = spawnSync('sh', ['-c', line], {
        cwd: linked.cwd,
        env: linked.env,
        encoding: 'utf8',
      })
      expect(r.status, `${line}: ${r.stderr}`).toBe(0)
    }
    expect(existsSync(path.join(linked.cwd, 'alice'))).toBe(true)
  })
})

describe('packages/core/README.md', () => {
  it('mentions every export of @agentmsg/core in an example', () => {
    const code = readmeBlocks('packages/core/README.md')
      .map((b) => b.code)
      .join('\n')
    const missing = Object.keys(core).filter((name) => !new RegExp(`\\b${name}\\b`).test(code))
    expect(missing).toEqual([])
  })
})

describe('README.md', () => {
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8')
  it('draws the package graph with every workspace package', () => {
    const arch = readme.slice(readme.indexOf('\n## Architecture\n'))
    for (const name of [
      'a2a',
      'cli',
      'client',
      'relay',
      'transport-https',
      'transport-relay',
      'core',
      'storage-fs',
      'storage-indexeddb',
    ]) {
      expect(arch).toContain(name)
    }
  })
})
