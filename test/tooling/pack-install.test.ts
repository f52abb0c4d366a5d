/**
 * The packages as a user installs them (./packed.ts): every published package packed with
 * `npm pack`, then, outside the repository, (1) a new project gets what the root README's
 * "Install, run, test" says to install for Node and runs the README's Node quick starts with
 * plain Node, and (2) `npm install -g` of the CLI as the README says puts a working `agentmsg`
 * in a global prefix's bin. The quick starts are TypeScript: esbuild strips their types (a
 * transform only, no bundling), and the .mjs it writes into the project resolves every import
 * from the project's own node_modules. What each prints is held to what its comments promise
 * (PRINTS, as in test/docs/readme.test.ts). The browser quick start is built with Vite from such
 * an install by test/browser/pack-install-vite.spec.ts.
 *
 * npm builds better-sqlite3 from source where it cannot download a prebuilt binary (as here),
 * which takes most of the two installs' time; they run at once.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { transform } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PRINTS, readmeBlocks, repoRoot } from '../docs/readme-blocks.js'
import {
  freshProject,
  NPM_INSTALL,
  npm,
  type Packed,
  pack,
  publishedPackages,
  readmeInstalls,
  resolveFrom,
  type ScopeRegistry,
  scratchOutside,
  sectionInstalls,
  serveScope,
} from './packed.js'

const exec = promisify(execFile)
const DONE = 'readme example: done'
const INSTALL_MS = 600_000

let box: string
let project: string
let globalPrefix: string
let packed: Map<string, Packed>
let registry: ScopeRegistry | undefined

beforeAll(async () => {
  box = await scratchOutside('agentmsg-pack-install-')
  packed = await pack([...publishedPackages().keys()], path.join(box, 'tarballs'))
  project = await freshProject(path.join(box, 'project'))
  // Nothing of the repository is reachable from there: what runs comes from the install.
  expect(await resolveFrom(project, '@agentmsg/core')).toBeUndefined()
  const installs = readmeInstalls()
  globalPrefix = path.join(box, 'global')
  // The README's two installs, at once: the project's, and the CLI into a global prefix of ours.
  registry = await serveScope(packed)
  await Promise.all([
    npm([...NPM_INSTALL, registry.flag, ...installs.node], project),
    npm([...NPM_INSTALL, registry.flag, '-g', '--prefix', globalPrefix, ...installs.global], box),
  ])
}, INSTALL_MS)

afterAll(async () => {
  await registry?.close()
  if (box) await rm(box, { recursive: true, force: true })
})

describe('the packed packages, installed outside the repository', () => {
  it('every published package packs with its built files, README and LICENSE', () => {
    for (const [name, { files }] of packed) {
      expect(files, name).toContain('LICENSE')
      expect(files, name).toContain('README.md')
      expect(
        files.some((f) => f.startsWith('dist/')),
        name,
      ).toBe(true)
      expect(
        files.some((f) => f.startsWith('src/')),
        name,
      ).toBe(false)
    }
    expect(packed.get('@agentmsg/cli')?.files).toContain('bin/agentmsg.js')
  })

  it('the project resolves the packages from its own node_modules', async () => {
    for (const name of ['@agentmsg/client/node', '@agentmsg/relay', 'better-sqlite3']) {
      const file = await resolveFrom(project, name)
      expect(file, name).toBeDefined()
      const inProject = (await realpath(file!)).startsWith(
        `${await realpath(project)}/node_modules/`,
      )
      expect(inProject, `${name}: ${file}`).toBe(true)
    }
  })

  const quickStarts = readmeBlocks('README.md').filter((b) => b.runtime === 'node')
  it('finds the README quick starts it runs', () => {
    expect(quickStarts.map((b) => b.section)).toContain('Quick start (agent)')
    expect(quickStarts.map((b) => b.section)).toContain('Relay quick start')
  })

  for (const block of quickStarts) {
    const name = `README.md#${block.index}`
    it(`${name} (${block.section}) runs on plain Node from the installed tarballs`, {
      timeout: 90_000,
    }, async () => {
      // What the block's own section says to install beside the quick start's packages.
      const extra = sectionInstalls(block.section)
      if (extra.length > 0) await npm([...NPM_INSTALL, registry!.flag, ...extra], project)
      const { code } = await transform(`${block.code}\nconsole.log(${JSON.stringify(DONE)})\n`, {
        loader: 'ts',
        format: 'esm',
        target: 'node20',
        sourcefile: `${name}.ts`,
      })
      const dir = path.join(project, `readme-${block.index}`)
      await mkdir(dir)
      await writeFile(path.join(dir, 'example.mjs'), code)
      const { stdout } = await exec(process.execPath, ['example.mjs'], { cwd: dir }).catch(
        (error: { stdout?: string; stderr?: string; message: string }) => {
          throw new Error(
            `${name} failed in ${dir}: ${error.message}\n${error.stdout}\n${error.stderr}`,
          )
        },
      )
      const lines = stdout.split('\n').filter((l) => l !== '')
      expect(lines.at(-1), `${name} ran to its last line:\n${stdout}`).toBe(DONE)
      // Each promised line, in any order (as test/docs/readme.test.ts checks them).
      const rest = [...lines]
      for (const expected of PRINTS[name] ?? []) {
        const found = rest.indexOf(expected)
        expect(
          found,
          `${name} printed ${JSON.stringify(expected)}:\n${stdout}`,
        ).toBeGreaterThanOrEqual(0)
        rest.splice(found, 1)
      }
    })
  }

  it('npm install -g of the CLI puts a working agentmsg on PATH', { timeout: 90_000 }, async () => {
    const bin = path.join(globalPrefix, 'bin')
    // Installed, not linked: the global package is a copy of the tarball.
    const installed = await realpath(path.join(bin, 'agentmsg'))
    expect(installed).toBe(
      path.join(await realpath(globalPrefix), 'lib/node_modules/@agentmsg/cli/bin/agentmsg.js'),
    )
    const home = path.join(box, 'home')
    const env = {
      ...process.env,
      PATH: `${bin}${path.delimiter}${process.env.PATH}`,
      AGENTMSG_HOME: home,
    }
    const agentmsg = (args: string[], flags: string[] = []) =>
      exec('agentmsg', [...args, ...flags], { cwd: box, env })

    const help = await agentmsg(['--help'])
    expect(help.stdout).toMatch(/^usage: agentmsg <command>/)
    for (const command of ['init', 'send', 'listen', 'inbox', 'relay', 'doctor'])
      expect(help.stdout).toContain(`\n  ${command} `)
    const version = JSON.parse(
      await readFile(path.join(repoRoot, 'packages/cli/package.json'), 'utf8'),
    ).version
    expect((await agentmsg(['--version'])).stdout.trim()).toBe(version)

    // The CLI README's first hour, in short: a relay on SQLite (better-sqlite3, built by the
    // global install), bob listening on it, alice's message reaching him.
    const init = JSON.parse((await agentmsg(['init', '--dir', './alice'])).stdout)
    expect(init.agent_id).toMatch(/^did:key:z6Mk/)
    const identity = JSON.parse((await agentmsg(['identity', '--dir', './alice', '--json'])).stdout)
    expect(identity.agent_id).toBe(init.agent_id)
    const bob = JSON.parse((await agentmsg(['init', '--dir', './bob'])).stdout).agent_id
    const running: Running[] = []
    try {
      const relay = await serve(['relay', '--data', './relay', '--port', '0', '--dev-tls'], env)
      running.push(relay)
      const url = /listening on (\S+)/.exec(relay.stderr())![1]!
      const ca = /development CA: (.+?) \(/.exec(relay.stderr())![1]!
      const trust = ['--ca', ca, '--allow-private', '127.0.0.1']
      const listen = await serve(
        ['listen', '--dir', './bob', '--relay', url, '--json', ...trust],
        env,
      )
      running.push(listen)
      const sent = await agentmsg(
        ['send', '--dir', './alice', '--to', bob, '--relay', url, '--text', 'hi bob'],
        ['--format', 'json', ...trust],
      )
      expect(JSON.parse(sent.stdout)).toMatchObject({ status: 'accepted', route: 'relay' })
      await expect.poll(listen.stdout, { timeout: 20_000 }).toContain('"from":"did:key:')
      const got = JSON.parse(listen.stdout().split('\n')[0]!)
      expect(got).toMatchObject({ from: init.agent_id, level: 3, sealed: true })
      expect(got.message.body.parts[0].text).toBe('hi bob')
    } finally {
      // Ctrl-C (SIGTERM alike) stops them cleanly: exit 0.
      for (const p of running.reverse()) expect(await p.stop()).toBe(0)
    }
  })
})

/** A long-running `agentmsg` command (relay, listen) and what it printed so far. */
interface Running {
  stdout: () => string
  stderr: () => string
  stop: () => Promise<number | null>
}

/** Start `agentmsg <args>` from PATH; resolves once it says it is listening. */
async function serve(args: string[], env: NodeJS.ProcessEnv): Promise<Running> {
  const child = spawn('agentmsg', args, { cwd: box, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
  await new Promise<void>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d
      if (/listening on/.test(err)) resolve()
    })
    void exited.then((code) => reject(new Error(`agentmsg ${args[0]} exited ${code}: ${err}`)))
  })
  return {
    stdout: () => out,
    stderr: () => err,
    stop: () => {
      child.kill('SIGTERM')
      return exited
    },
  }
}
