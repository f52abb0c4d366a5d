#!/usr/bin/env node
/**
 * The build of `npm start`: tsup for only the packages whose inputs changed since their last
 * build, then the post-build guard (scripts/check-build.mjs) when anything was built.
 * `npm run build` stays the full build (every package, always).
 *
 * The packages and their tsup options come from tsup.config.ts itself (entries derived from each
 * package.json), so both builds build the same thing. A package is up to date when its stamp,
 * `.tmp/build-stamps/<name>.json`, records
 *   - the hash of its inputs: every file under its `src/`, its package.json, the same for each
 *     workspace package it depends on (the declaration build reads their sources through the
 *     `@agentmsg/source` condition), tsup.config.ts, tsconfig.base.json and the versions of
 *     tsup, esbuild and TypeScript; and
 *   - the files its build left in `dist/` (name, size, mtime), which must still be there
 *     unchanged: a full `npm run build` or a deleted dist/ makes the package build again.
 * The stamps live outside dist/ because dist/ is what npm publishes.
 *
 *   node scripts/build-incremental.mjs            build what changed (+ check-build if any)
 *   node scripts/build-incremental.mjs --no-check  skip check-build
 *   node scripts/build-incremental.mjs --stamp     only record stamps for the dist/ on disk
 *                                                  (right after a full `tsup`)
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const stampDir = path.join(root, '.tmp', 'build-stamps')
const args = new Set(process.argv.slice(2))
const known = new Set(['--no-check', '--stamp'])
for (const a of args) {
  if (!known.has(a)) {
    console.error(`agentmsg: usage: unknown option ${a} (known: ${[...known].join(', ')})`)
    process.exit(2)
  }
}

/** Every file under `dir`, as sorted paths relative to `base`; none when `dir` is missing. */
async function filesUnder(dir, base = dir) {
  let entries
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch (error) {
    if (error.code === 'ENOENT') return []
    throw error
  }
  const out = []
  for (const e of entries) {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) out.push(...(await filesUnder(full, base)))
    else if (e.isFile()) out.push(path.relative(base, full))
  }
  return out.sort()
}

const sha256 = (data) => createHash('sha256').update(data).digest('hex')

/** `relative path  sha256` lines of `files` (relative to the root). */
async function digestLines(files) {
  const lines = []
  for (const f of files) lines.push(`${f}  ${sha256(await readFile(path.join(root, f)))}`)
  return lines
}

async function versionOf(pkg) {
  try {
    const file = path.join(root, 'node_modules', pkg, 'package.json')
    return `${pkg}@${JSON.parse(await readFile(file, 'utf8')).version}`
  } catch {
    return `${pkg}@missing`
  }
}

/** The tsup options of every package, from tsup.config.ts (as `npm run build` uses it). */
async function tsupPackages() {
  const { tsImport } = await import('tsx/esm/api')
  const mod = await tsImport(pathToFileURL(path.join(root, 'tsup.config.ts')).href, import.meta.url)
  const config = mod.default
  const list = Array.isArray(config) ? config : [config]
  return list.map((options) => {
    const dir = path.relative(root, path.resolve(root, options.outDir, '..'))
    return { name: options.name, dir, options }
  })
}

/** Workspace package directories by package name (packages/*). */
async function workspace() {
  const byName = new Map()
  for (const e of await readdir(path.join(root, 'packages'), { withFileTypes: true })) {
    if (!e.isDirectory()) continue
    const dir = path.join('packages', e.name)
    try {
      const manifest = JSON.parse(await readFile(path.join(root, dir, 'package.json'), 'utf8'))
      byName.set(manifest.name, { dir, manifest })
    } catch (error) {
      if (error.code !== 'ENOENT') throw error
    }
  }
  return byName
}

/** `dir` and the directories of the workspace packages it depends on, transitively. */
function closure(dir, byName) {
  const byDir = new Map([...byName.values()].map((p) => [p.dir, p]))
  const seen = new Set()
  const walk = (d) => {
    if (seen.has(d)) return
    seen.add(d)
    const m = byDir.get(d)?.manifest ?? {}
    for (const dep of Object.keys({ ...m.dependencies, ...m.peerDependencies })) {
      const p = byName.get(dep)
      if (p) walk(p.dir)
    }
  }
  walk(dir)
  return [...seen].sort()
}

/** The hash of everything a package's build reads. */
async function inputsHash(dir, byName, shared) {
  const lines = [...shared]
  for (const d of closure(dir, byName)) {
    const src = (await filesUnder(path.join(root, d, 'src'))).map((f) => path.join(d, 'src', f))
    lines.push(...(await digestLines([path.join(d, 'package.json'), ...src])))
  }
  return sha256(lines.join('\n'))
}

/** `[name, size, mtimeMs]` of every file in a package's dist/. */
async function outputsOf(dir) {
  const distDir = path.join(root, dir, 'dist')
  const out = []
  for (const f of await filesUnder(distDir)) {
    const s = await stat(path.join(distDir, f))
    out.push([f, s.size, s.mtimeMs])
  }
  return out
}

const stampFile = (name) => path.join(stampDir, `${name}.json`)

async function readStamp(name) {
  try {
    return JSON.parse(await readFile(stampFile(name), 'utf8'))
  } catch {
    return undefined
  }
}

async function writeStamp(pkg, inputs) {
  await mkdir(stampDir, { recursive: true })
  const outputs = await outputsOf(pkg.dir)
  await writeFile(stampFile(pkg.name), `${JSON.stringify({ inputs, outputs })}\n`)
}

/** Why a package must be built, or undefined when its stamp says it is up to date. */
async function staleReason(pkg, inputs) {
  const stamp = await readStamp(pkg.name)
  if (!stamp) return 'never built by this script'
  if (stamp.inputs !== inputs) return 'sources changed'
  const now = await outputsOf(pkg.dir)
  if (now.length === 0) return 'dist/ is empty'
  if (JSON.stringify(now) !== JSON.stringify(stamp.outputs)) return 'dist/ changed since'
  return undefined
}

process.chdir(root) // tsup's options are relative to the repository root
const [packages, byName] = await Promise.all([tsupPackages(), workspace()])
const shared = [
  ...(await digestLines(['tsup.config.ts', 'tsconfig.base.json'])),
  ...(await Promise.all(['tsup', 'esbuild', 'typescript'].map(versionOf))),
]
const hashes = new Map()
for (const pkg of packages) hashes.set(pkg.name, await inputsHash(pkg.dir, byName, shared))

if (args.has('--stamp')) {
  for (const pkg of packages) await writeStamp(pkg, hashes.get(pkg.name))
  console.log(`build: stamped ${packages.length} packages (${path.relative(root, stampDir)})`)
  process.exit(0)
}

const stale = []
const fresh = []
for (const pkg of packages) {
  const reason = await staleReason(pkg, hashes.get(pkg.name))
  if (reason) stale.push({ pkg, reason })
  else fresh.push(pkg.name)
}
if (stale.length === 0) {
  console.log(`build: all ${packages.length} packages unchanged since their last build, skipped`)
  process.exit(0)
}
if (fresh.length > 0) console.log(`build: unchanged, skipped: ${fresh.join(', ')}`)
for (const { pkg, reason } of stale) console.log(`build: building ${pkg.name}: ${reason}`)

// In parallel, as `tsup` builds its config; its progress lines are silenced (errors are not),
// so each package reports here when it is done.
const { build } = await import('tsup')
const failed = []
const built = []
await Promise.all(
  stale.map(async ({ pkg }) => {
    const started = performance.now()
    try {
      await build({ ...pkg.options, config: false, silent: true })
      built.push(pkg)
      console.log(
        `build: built ${pkg.name} (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      )
    } catch (error) {
      const first = String(error?.message ?? error)
        .split('\n')[0]
        .replace(/:$/, '')
      failed.push(`${pkg.name}: ${first}`)
    }
  }),
)
if (failed.length > 0) {
  // What built is stamped: the next run builds only the failed ones (and checks everything).
  for (const pkg of built) await writeStamp(pkg, hashes.get(pkg.name))
  console.error(`agentmsg: build_failed: ${failed.join('; ')} (see tsup's output above)`)
  process.exit(1)
}
if (!args.has('--no-check')) {
  const check = spawnSync(process.execPath, [path.join(root, 'scripts', 'check-build.mjs')], {
    cwd: root,
    stdio: 'inherit',
  })
  // Unstamped, a failed check runs again on the next start instead of scrolling away.
  if (check.status !== 0) process.exit(check.status ?? 1)
}
for (const pkg of built) await writeStamp(pkg, hashes.get(pkg.name))
