import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { defineConfig, type Options } from 'tsup'

/**
 * The export condition that points an entry at its TypeScript source. Every `exports` and
 * `imports` entry of a package carries it first; tsc (`customConditions`), vitest
 * (`resolve.conditions`) and the esbuild-bundled test fixtures resolve through it, and this file
 * pairs each source with the dist file it builds. Named after the project so that a consumer
 * whose own tooling sets a generic `source` condition never resolves our `.ts` files.
 */
const SOURCE = '@agentmsg/source'

type Target = string | null | { [condition: string]: Target }

interface Manifest {
  name: string
  private?: boolean
  bin?: string | Record<string, string>
  exports?: Record<string, Target>
  imports?: Record<string, Target>
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
}

/**
 * Files built that no `exports`/`imports` entry names (e.g. a worker started with
 * `new Worker(new URL(…))`), per package directory: `{ 'dist name': 'src/file.ts' }`.
 */
const EXTRA_ENTRIES: Record<string, Record<string, string>> = {
  // The SQLite relay store's writer worker, next to the store in dist/.
  'packages/relay': { 'sqlite-writer': 'src/store/sqlite-writer.ts' },
  // The CLI, run by its committed bin shim (bin/agentmsg.js) once built.
  'packages/cli': { cli: 'src/cli.ts' },
}

const distName = (target: string, where: string): string => {
  const m = /^\.\/dist\/(.+)\.js$/.exec(target)
  if (!m) throw new Error(`${where}: expected a ./dist/….js target, got ${target}`)
  return m[1] as string
}

/**
 * tsup entries of one package, read from its manifest: each `exports`/`imports` entry pairs its
 * `@agentmsg/source` file with the `.js` file the other conditions name. A string source pairs
 * with the first non-`types` condition; a nested source object (platform variants of a `#…`
 * import) pairs condition by condition. `bin` files in dist/ build from `src/<same name>.ts`.
 */
function entriesOf(dir: string, manifest: Manifest): Record<string, string> {
  const entry: Record<string, string> = {}
  const add = (dist: string, source: string, where: string) => {
    const name = distName(dist, where)
    const file = `${dir}/${source.replace(/^\.\//, '')}`
    if (!existsSync(file)) throw new Error(`${where}: ${file} does not exist`)
    entry[name] = file
  }
  const entries = { ...manifest.exports, ...manifest.imports }
  for (const [key, target] of Object.entries(entries)) {
    const where = `${manifest.name} ${JSON.stringify(key)}`
    if (key === './package.json') continue
    if (target === null || typeof target !== 'object' || !(SOURCE in target)) {
      throw new Error(`${where}: every entry needs a "${SOURCE}" condition first`)
    }
    const { [SOURCE]: source, types: _types, ...built } = target
    if (typeof source === 'string') {
      const first = Object.values(built).find((t) => typeof t === 'string')
      if (typeof first !== 'string') throw new Error(`${where}: no built file to pair with`)
      add(first, source, where)
    } else if (source && typeof source === 'object') {
      for (const [condition, file] of Object.entries(source)) {
        const dist = built[condition]
        if (typeof file !== 'string' || typeof dist !== 'string') {
          throw new Error(`${where}: "${SOURCE}"."${condition}" has no built "${condition}" twin`)
        }
        add(dist, file, where)
      }
    }
  }
  const bins = typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {})
  for (const bin of bins) {
    // A bin outside dist/ is a committed file (the CLI's shim: npm links a bin only if it
    // exists at install time, before any build); what it runs is in EXTRA_ENTRIES.
    if (!bin.replace(/^\.\//, '').startsWith('dist/')) continue
    const name = distName(bin, `${manifest.name} bin`)
    add(bin, `src/${name}.ts`, `${manifest.name} bin`)
  }
  for (const [name, file] of Object.entries(EXTRA_ENTRIES[dir] ?? {}))
    add(`./dist/${name}.js`, file, dir)
  return entry
}

/**
 * A package's dependencies stay imports in its dist. tsup only externalizes the dependencies of
 * the package.json in the working directory, which is the private root here, so without this it
 * would inline `@noble/*` and `multiformats` into every package (a second copy for consumers).
 */
function dependencies(manifest: Manifest): RegExp[] {
  return Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).map(
    (dep) => new RegExp(`^${dep.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?:/|$)`),
  )
}

/** Whether any entry reaches a non-Node consumer (a `default` or `browser` condition). */
function isomorphic(manifest: Manifest): boolean {
  const walk = (t: Target): boolean =>
    t !== null &&
    typeof t === 'object' &&
    Object.entries(t).some(
      ([c, v]) => c !== SOURCE && (c === 'default' || c === 'browser' || walk(v)),
    )
  return Object.values({ ...manifest.exports, ...manifest.imports }).some(walk)
}

/**
 * One tsup run builds every published package (private ones, e.g. test suites, are skipped).
 * Each is ESM-only with declarations, platform-neutral unless all its entries are Node-only;
 * `#…` subpath imports stay external so the consumer's resolver picks the platform file through
 * the package's `imports` conditions. The declaration build resolves other packages and `#…`
 * imports through `@agentmsg/source` (tsconfig.base.json `customConditions`): it never needs a
 * built `dist/`, and the emitted `.d.ts` keeps the specifiers as written.
 */
function pkg(dir: string): Options | undefined {
  const manifest = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as Manifest
  if (manifest.private) return undefined
  const entry = entriesOf(dir, manifest)
  if (Object.keys(entry).length === 0) return undefined
  return {
    name: dir.replace(/^packages\//, ''),
    entry,
    outDir: `${dir}/dist`,
    format: ['esm'],
    platform: isomorphic(manifest) ? 'neutral' : 'node',
    target: 'es2022',
    // A bin-only package (the CLI) has no types to publish.
    dts: manifest.exports !== undefined,
    splitting: true,
    sourcemap: false,
    clean: true,
    treeshake: true,
    external: [/^#/, /^node:/, ...dependencies(manifest)],
    tsconfig: 'tsconfig.base.json',
    // Keep `node:` specifiers: tsup strips them by default, and a bare `crypto` is what browser
    // bundlers silently polyfill or stub instead of failing.
    removeNodeProtocol: false,
  }
}

export default defineConfig(
  readdirSync('packages', { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(`packages/${d.name}/package.json`))
    .map((d) => pkg(`packages/${d.name}`))
    .filter((options): options is Options => options !== undefined),
)
