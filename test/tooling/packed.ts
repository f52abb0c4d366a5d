/**
 * The published packages as a user gets them: each packed by `npm pack` (so `files`, `bin` and
 * the prepack LICENSE copy are what a publish would ship) and installed by npm into a new
 * project in the system's temporary directory, outside this repository. Shared by
 * pack-install.test.ts (Node quick starts, the global CLI) and
 * test/browser/pack-install-vite.spec.ts (the Vite app in Chromium).
 *
 * What a user installs is read from the root README's "Install, run, test" section, so the test
 * follows the instructions rather than restating them, and npm installs it by name: the
 * `@agentmsg` scope from a registry on loopback that serves the tarballs ({@link serveScope}),
 * everything else (`better-sqlite3`, `vite`) from the configured registry, through npm's cache.
 * So npm lays the packages out as it would from the public registry (a global `@agentmsg/cli`
 * gets its own `@agentmsg/relay` beside `better-sqlite3`, which that relay loads).
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createReadStream, readdirSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { fences, repoRoot } from '../docs/readme-blocks.js'

const exec = promisify(execFile)

interface Manifest {
  name: string
  version: string
  private?: boolean
  dependencies?: Record<string, string>
}

/** Every package a publish ships (packages/*, not private), by name: its directory and manifest. */
export function publishedPackages(): Map<string, { dir: string; manifest: Manifest }> {
  const out = new Map<string, { dir: string; manifest: Manifest }>()
  for (const entry of readdirSync(path.join(repoRoot, 'packages'), { withFileTypes: true })) {
    const dir = path.join(repoRoot, 'packages', entry.name)
    if (!entry.isDirectory()) continue
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest
    if (!manifest.private) out.set(manifest.name, { dir, manifest })
  }
  return out
}

/** `names` and every published package they depend on, directly or not. */
export function withAgentmsgDependencies(names: string[]): string[] {
  const published = publishedPackages()
  const seen = new Set<string>()
  const visit = (name: string) => {
    if (seen.has(name)) return
    const pkg = published.get(name)
    if (!pkg) throw new Error(`${name} is not a published package of this repository`)
    seen.add(name)
    for (const dep of Object.keys(pkg.manifest.dependencies ?? {}))
      if (published.has(dep)) visit(dep)
  }
  for (const name of names) visit(name)
  return [...seen].sort()
}

/**
 * The environment npm runs in: this process's, less what `npm test` passes its scripts about
 * the repository (its prefix, package and lifecycle), which would point npm back at it.
 */
function npmEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra }
  for (const key of Object.keys(env)) {
    if (
      /^npm_(package|lifecycle)_/.test(key) ||
      /^npm_config_(prefix|local_prefix|global_prefix)$/.test(key) ||
      key === 'INIT_CWD'
    ) {
      if (!(key in extra)) delete env[key]
    }
  }
  return env
}

/** Run `npm <args>` in `cwd`; its stdout. A failure carries npm's output. */
export async function npm(
  args: string[],
  cwd: string,
  extra: Record<string, string> = {},
): Promise<string> {
  try {
    const { stdout } = await exec('npm', args, {
      cwd,
      env: npmEnv(extra),
      maxBuffer: 64 * 1024 * 1024,
    })
    return stdout
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string }
    throw new Error(
      `npm ${args.join(' ')} in ${cwd} failed: ${e.message}\n${e.stdout}\n${e.stderr}`,
    )
  }
}

/** Run a shell command line that calls npm (a README's) in `cwd`, in npm's environment. */
export async function npmShell(
  command: string,
  cwd: string,
  extra: Record<string, string> = {},
): Promise<void> {
  await exec('sh', ['-c', command], { cwd, env: npmEnv(extra) }).catch(
    (e: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`${command} in ${cwd} failed: ${e.message}\n${e.stdout}\n${e.stderr}`)
    },
  )
}

/** Quick and quiet: the cache first, no audit, no funding notes. */
export const NPM_INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund']

/** A packed package: its manifest, its tarball, the files in it and the tarball's digests. */
export interface Packed {
  manifest: Manifest
  tarball: string
  files: string[]
  integrity: string
  shasum: string
}

/** `npm pack` each of `names` into `dest` (made if missing), all at once; by name. */
export async function pack(names: string[], dest: string): Promise<Map<string, Packed>> {
  await mkdir(dest, { recursive: true })
  const published = publishedPackages()
  const packed = await Promise.all(
    names.map(async (name) => {
      const pkg = published.get(name)
      if (!pkg) throw new Error(`${name} is not a published package of this repository`)
      const [out] = JSON.parse(await npm(['pack', '--json', '--pack-destination', dest], pkg.dir))
      const { filename, files, integrity, shasum } = out as {
        filename: string
        files: Array<{ path: string }>
        integrity: string
        shasum: string
      }
      const tarball = path.join(dest, filename)
      return [
        name,
        { manifest: pkg.manifest, tarball, files: files.map((f) => f.path), integrity, shasum },
      ] as const
    }),
  )
  return new Map(packed)
}

/** A registry for the `@agentmsg` scope; `flag` points npm at it. */
export interface ScopeRegistry {
  flag: string
  close(): Promise<void>
}

/**
 * Serve `packed` as the `@agentmsg` scope of an npm registry on loopback (plain HTTP: nothing
 * leaves the machine): a packument per package (`GET /@agentmsg%2fcore`) naming its one version,
 * and the tarballs. npm given {@link ScopeRegistry.flag} asks it for that scope only. The URL
 * is new each run, so a packument npm cached from an earlier run (`--prefer-offline`) is never
 * taken for this one's.
 */
export async function serveScope(packed: Map<string, Packed>): Promise<ScopeRegistry> {
  let base = ''
  const run = `/${randomUUID()}/`
  const tarballs = new Map([...packed.values()].map((p) => [`-/${path.basename(p.tarball)}`, p]))
  const server = createServer((request, response) => {
    const pathname = decodeURIComponent(new URL(request.url ?? '/', base).pathname)
    const wanted = pathname.startsWith(run) ? pathname.slice(run.length) : ''
    const tgz = tarballs.get(wanted)
    const pkg = packed.get(wanted)
    if (tgz) {
      response.writeHead(200, { 'content-type': 'application/octet-stream' })
      createReadStream(tgz.tarball).pipe(response)
    } else if (pkg) {
      const { manifest, tarball, integrity, shasum } = pkg
      const { name, version } = manifest
      const dist = { tarball: `${base}${run}-/${path.basename(tarball)}`, integrity, shasum }
      const packument = {
        name,
        'dist-tags': { latest: version },
        versions: { [version]: { ...manifest, _id: `${name}@${version}`, dist } },
      }
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(packument))
    } else {
      response.writeHead(404, { 'content-type': 'application/json' })
      response.end('{"error":"not found"}')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    flag: `--@agentmsg:registry=${base}${run}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

/** A directory for one run in the system's temporary directory, outside the repository. */
export function scratchOutside(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), prefix))
}

/** A new, empty project at `dir`: a package.json and nothing else. */
export async function freshProject(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true })
  const manifest = { name: path.basename(dir), version: '0.0.0', private: true }
  await writeFile(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  return dir
}

/**
 * Where plain Node, started in `dir`, resolves `specifier` to (an `import` there), or undefined
 * when it does not: before an install nothing may, so no node_modules of the repository leaks in.
 * A child process, so that no condition or hook of the test runner takes part.
 */
export async function resolveFrom(dir: string, specifier: string): Promise<string | undefined> {
  const code = 'process.stdout.write(import.meta.resolve(process.argv[1]))'
  try {
    const { stdout } = await exec(
      process.execPath,
      ['--input-type=module', '-e', code, specifier],
      { cwd: dir, env: { ...process.env, NODE_OPTIONS: '', NODE_PATH: '' } },
    )
    return fileURLToPath(stdout)
  } catch {
    return undefined
  }
}

/** The shell lines of a section of the root README, comments removed. */
function sectionShellLines(section = 'Install, run, test'): string[] {
  return fences('README.md')
    .filter((f) => f.section === section && (f.lang === 'sh' || f.lang === 'bash'))
    .flatMap((f) => f.code.split('\n'))
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line !== '')
}

/**
 * What the root README tells a user to install: `node` (the Node quick starts), `browser` (the
 * browser quick start's bundle) and `global` (the CLI), each a list of package names.
 */
export function readmeInstalls(): { node: string[]; browser: string[]; global: string[] } {
  const installs = sectionShellLines()
    .filter((line) => /^npm install \S/.test(line))
    .map((line) => line.split(/\s+/).slice(2))
  const global = installs.find((args) => args.includes('-g'))?.filter((a) => a !== '-g')
  const browser = installs.find((args) => args.includes('@agentmsg/storage-indexeddb'))
  const node = installs.find((args) => args !== browser && !args.includes('-g'))
  if (!node || !browser || !global) {
    throw new Error('README.md "Install, run, test" must say what to install: Node, browser, CLI')
  }
  return { node, browser, global }
}

/** What a section of the root README adds to the install (its own `npm install` lines). */
export function sectionInstalls(section: string): string[] {
  return sectionShellLines(section)
    .filter((line) => /^npm install \S/.test(line))
    .flatMap((line) => line.split(/\s+/).slice(2))
}

/** The root README's command that puts `agentmsg` on PATH in a clone (`npm link …`). */
export function readmeLinkCommand(): string {
  const link = sectionShellLines().find((line) => /^npm link\b/.test(line))
  if (!link) throw new Error('README.md "Install, run, test" must say how agentmsg gets on PATH')
  return link
}
