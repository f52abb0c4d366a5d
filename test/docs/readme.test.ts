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
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import * as core from '../../packages/core/src/index.js'
import {
  allBlocks,
  fences,
  type ReadmeBlock,
  readmeBlocks,
  repoRoot,
  testedReadmes,
} from './readme-blocks.js'

/**
 * How a README's Node blocks form programs: `'one'` (the default) joins them into one program,
 * in order, as a reader follows the page; `'each'` runs every block alone (independent examples);
 * `'vitest'` joins them into a vitest test file, imported into this one as it is collected (its
 * examples define tests: the conformance suites).
 */
const PROGRAMS: Record<string, 'one' | 'each' | 'vitest'> = {
  'README.md': 'each',
  'packages/conformance/README.md': 'vitest',
}

/**
 * What a program must print (lines of its stdout, others may come between), by
 * `<readme>#<index of its first block>`: what the examples' comments promise.
 */
const PRINTS: Record<string, string[]> = {
  'README.md#0': ['3 false true hello', 'got it'],
  'README.md#3': ['3 {"parts":[{"type":"text","text":"note to self"}]}'],
  'README.md#4': ['3 hello', 'true'],
  'README.md#5': ['true true the meeting is at 10', 'sealed false'],
  'README.md#9': [
    'agentmsg.deliver agentmsg.receive agentmsg.relay.publish agentmsg.send',
    'accepted',
  ],
  'packages/client/README.md#0': ['true 3 false hello', 'direct relay got: hello'],
  'packages/transport-https/README.md#0': [
    'true',
    '3 false {"parts":[{"text":"hi bob","type":"text"}]}',
  ],
  'packages/transport-relay/README.md#0': ['true', 'true'],
  'packages/relay/README.md#0': ['true', '401 true'],
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
  return PROGRAMS[readme] === 'each' ? blocks.map((b) => [b]) : [blocks]
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
  it('finds the blocks of every README but the CLI one (its examples are shell, tested there)', () => {
    expect(testedReadmes()).toContain('README.md')
    expect(testedReadmes()).toContain('packages/core/README.md')
    expect(testedReadmes()).not.toContain('packages/cli/README.md')
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

/** Run the CLI from its sources; resolves with its exit code. */
async function cli(args: string[]): Promise<number | null> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=@agentmsg/source', 'packages/cli/src/cli.ts', ...args],
    { cwd: repoRoot, env: process.env, stdio: 'ignore' },
  )
  return new Promise((resolve) => child.on('close', resolve))
}

describe('README shell blocks', () => {
  // Not run (they start servers and write files), but what they name must exist.
  const lines = testedReadmes().flatMap((readme) =>
    fences(readme)
      .filter((f) => f.lang === 'sh' || f.lang === 'bash')
      .flatMap((f) =>
        f.code.split('\n').map((line) => ({ readme, line: line.replace(/#.*/, '').trim() })),
      )
      .filter((l) => l.line !== ''),
  )

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

  it('names agentmsg commands that the CLI has (each answers --help)', {
    timeout: 60_000,
  }, async () => {
    const commands = new Set(
      lines.flatMap(({ line }) =>
        [...line.matchAll(/\bagentmsg (--help|[a-z]+)/g)].map((m) => m[1]!),
      ),
    )
    expect(commands.size).toBeGreaterThan(0)
    for (const command of commands) {
      const args = command === '--help' ? ['--help'] : [command, '--help']
      expect(await cli(args), `agentmsg ${args.join(' ')}`).toBe(0)
    }
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
