#!/usr/bin/env node
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
/**
 * Post-build guard, run by `npm run build` after tsup: checks only the built output can answer.
 *
 * 1. Bundle every browser-facing entry of the built packages with esbuild for the browser
 *    (`platform: 'browser'`, condition `browser`, minified) and fail if any Node built-in is
 *    reached: a `node:` import in an isomorphic entry breaks every browser consumer, and some
 *    bundlers only stub it and fail at run time.
 * 2. Report minified and min+gzip (level 9) sizes, as served (each file gzipped on its own, as
 *    a browser downloads a split bundle, with the file count) and as one stream; note (as
 *    information) an entry past its budget and fail above its hard cap, both judged as served.
 *    An entry with `lazyGroups` also gets a row for all it loads in normal use (up front + the
 *    lazy chunks of no group) and a row per group of lazy chunks it loads only in some
 *    situations (the sealed box on the first seal or open, …; see ./bundle-groups.mjs), and
 *    fails if a group's code is loaded up front or in normal use. The table is also written to
 *    `.tmp/bundle-sizes.json` for the bench.
 * 3. Pack every package (`npm pack`, as publish does) and run publint and are-the-types-wrong on
 *    each tarball: publint errors and attw problems fail, publint warnings and suggestions are
 *    printed. attw uses its `esm-only` profile (see ATTW_IGNORED).
 *
 * Add a row to BROWSER_ENTRIES (./browser-entries.mjs) when a package gains a browser-facing
 * entry.
 */
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core'
import { problemAffectsResolutionKind, problemKindInfo } from '@arethetypeswrong/core/problems'
import { build } from 'esbuild'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'
import { BROWSER_ENTRIES } from './browser-entries.mjs'
import { groupLazyChunks, lazyTargets, sizesOf, staticClosure } from './bundle-groups.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const KB = 1024
const execFileAsync = promisify(execFile)
/** The condition that points exports and imports at src/ in the repository (tsup.config.ts). */
const SOURCE_CONDITION = '@agentmsg/source'

const NODE_BUILTINS = new Set(builtinModules)

/**
 * Turn every Node built-in import into an error that names who imported it. Without this,
 * esbuild's message ("Could not resolve …, are you trying to bundle for node?") does not say
 * that this is the browser guard failing. A bare name such as `events` is a built-in only when
 * no installed package of that name (a browser polyfill) resolves.
 */
function forbidNodeBuiltins(found) {
  return {
    name: 'forbid-node-builtins',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.probe) return undefined
        const bare = args.path.split('/')[0]
        if (!args.path.startsWith('node:') && !NODE_BUILTINS.has(bare)) return undefined
        if (!args.path.startsWith('node:')) {
          const { errors } = await b.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            pluginData: { probe: true },
          })
          if (errors.length === 0) return undefined
        }
        const importer = args.importer ? path.relative(root, args.importer) : '(entry)'
        found.push(`${args.path} ← ${importer}`)
        return {
          errors: [{ text: `Node built-in "${args.path}" reached from a browser entry` }],
        }
      })
    },
  }
}

const isBuiltin = (spec) => spec.startsWith('node:') || NODE_BUILTINS.has(spec)

/** Bundles checked to hold no `@opentelemetry/*` module. */
let withoutOtel = 0

const fmt = (n) => (n >= KB ? `${(n / KB).toFixed(2)} KB` : `${n} B`)

async function checkEntry(entry) {
  const builtins = []
  const source = entry.file
    ? { entryPoints: [path.join(root, entry.file)] }
    : { stdin: { contents: entry.contents, resolveDir: root, sourcefile: 'virtual-entry.js' } }
  let result
  try {
    result = await build({
      ...source,
      absWorkingDir: root,
      bundle: true,
      platform: 'browser',
      conditions: ['browser'],
      format: 'esm',
      target: 'es2022',
      minify: true,
      // Code splitting as an application bundler does it, so a lazily imported fallback (the
      // noble provider, loaded only where WebCrypto lacks Ed25519) is measured apart from what
      // the page loads up front.
      splitting: true,
      outdir: path.join(root, '.tmp', 'bundle-check'),
      // Never read tsconfig.json: what consumers get is resolved by package.json conditions
      // alone (`browser`, never `@agentmsg/source`), and the guard below rejects any src/ file.
      tsconfigRaw: {},
      write: false,
      metafile: true,
      logLevel: 'silent',
      plugins: [forbidNodeBuiltins(builtins)],
    })
  } catch (err) {
    if (builtins.length > 0) {
      return {
        error: `browser bundle reaches Node built-ins (use a #… import with a browser branch):\n    ${[...new Set(builtins)].join('\n    ')}`,
      }
    }
    const msgs = (err.errors ?? []).map(
      (e) => `${e.text}${e.location ? ` (${e.location.file}:${e.location.line})` : ''}`,
    )
    return { error: `esbuild failed:\n    ${msgs.join('\n    ') || String(err)}` }
  }
  const fromSrc = Object.keys(result.metafile.inputs).filter((p) =>
    /^packages\/[^/]+\/src\//.test(p),
  )
  if (fromSrc.length > 0) {
    return { error: `bundle reached package sources instead of dist/: ${fromSrc.join(', ')}` }
  }
  // OpenTelemetry is an optional peer that core looks for at run time (packages/core/src/
  // telemetry.ts): no browser bundle may carry any of it, installed or not.
  const otel = Object.keys(result.metafile.inputs).filter((p) => p.includes('@opentelemetry/'))
  if (otel.length > 0) return { error: `bundles OpenTelemetry code: ${otel.join(', ')}` }
  withoutOtel++
  // An import marked external elsewhere would not pass through onResolve; check the graph too.
  const leaked = Object.values(result.metafile.inputs)
    .flatMap((input) => input.imports)
    .filter((imp) => isBuiltin(imp.path))
  if (leaked.length > 0) {
    return {
      error: `browser bundle imports Node built-ins: ${leaked.map((i) => i.path).join(', ')}`,
    }
  }
  // Up-front cost: the entry chunk and every chunk it imports statically. Chunks reached only
  // through import() are lazy and reported apart. With splitting, esbuild's metafile marks every
  // import() target as an entry point too: the page's entry is the one nothing loads lazily.
  const outputs = result.metafile.outputs
  const lazyOnes = lazyTargets(outputs)
  const entryOut = Object.keys(outputs).find(
    (k) => outputs[k].entryPoint !== undefined && !lazyOnes.has(k),
  )
  const initial = staticClosure(outputs, [entryOut])
  const contents = new Map(result.outputFiles.map((f) => [path.relative(root, f.path), f.contents]))
  const sum = (names) => sizesOf(contents, names, (b) => gzipSync(b, { level: 9 }))
  const js = Object.keys(outputs).filter((k) => k.endsWith('.js'))
  const first = sum([...initial])
  const lazy = sum(js.filter((k) => !initial.has(k)))
  const row = {
    ...first,
    lazyGzip: lazy.gzip,
    inputs: Object.keys(result.metafile.inputs).length,
  }
  if (!entry.lazyGroups) return row
  const sorted = groupLazyChunks(outputs, initial, entry.lazyGroups)
  for (const g of sorted.groups) {
    if (g.misplaced.length > 0) {
      return {
        error: `loads ${g.what} code up front or in normal use (it must be a lazy chunk of its own): ${g.misplaced.join(', ')}`,
      }
    }
    if (g.required && g.targets === 0) {
      return { error: `no lazy chunk reaches ${g.marker} (${g.what})` }
    }
  }
  const all = sum([...sorted.allLoaded])
  return {
    ...row,
    allLoaded: { ...all, chunks: sorted.allLoaded.size - initial.size },
    groups: sorted.groups.map((g) => {
      const withGroup = sum([...sorted.allLoaded, ...g.only])
      return {
        ...g,
        ...withGroup,
        groupGzip: sum([...g.only]).gzip,
        chunks: g.only.size,
      }
    }),
  }
}

async function checkSizes() {
  const rows = []
  const notes = []
  let failed = false
  for (const entry of BROWSER_ENTRIES) {
    if (!existsSync(path.join(root, entry.pkg, 'package.json'))) {
      rows.push({ name: entry.name, status: 'skipped (package not present)' })
      continue
    }
    if (entry.file && !existsSync(path.join(root, entry.file))) {
      failed = true
      rows.push({ name: entry.name, status: 'FAIL' })
      notes.push(`✗ ${entry.name}: ${entry.file} was not built (check tsup.config.ts)`)
      continue
    }
    const r = await checkEntry(entry)
    if (r.error) {
      failed = true
      rows.push({ name: entry.name, status: 'FAIL' })
      notes.push(`✗ ${entry.name}: ${r.error}`)
      continue
    }
    // Budgets and caps judge the figure as served: each file gzipped on its own, what the
    // browser downloads (sizesOf in ./bundle-groups.mjs); one stream is reported beside it.
    const judge = (name, size, limits) => {
      const what = `${fmt(size.served)} as served (${size.files} file${size.files === 1 ? '' : 's'}; ${fmt(size.gzip)} as one stream)`
      if (size.served > limits.cap) {
        failed = true
        notes.push(`✗ ${name}: ${what} is above the hard cap of ${fmt(limits.cap)}`)
        return 'FAIL'
      }
      if (size.served > limits.budget) {
        // Information, not an error: the build passes below the cap; the budget only marks
        // growth worth a look.
        notes.push(
          `ℹ ${name}: ${what}, ${fmt(size.served - limits.budget)} past its ${fmt(limits.budget)} budget, within the ${fmt(limits.cap)} cap (information: the build passes)`,
        )
        return 'ok, past budget'
      }
      return 'ok'
    }
    const sizes = (size, limits) => ({
      minBytes: size.min,
      gzipBytes: size.gzip,
      servedGzipBytes: size.served,
      files: size.files,
      ...(limits?.budget === undefined
        ? {}
        : { budgetGzipBytes: limits.budget, capGzipBytes: limits.cap }),
    })
    rows.push({
      name: entry.name,
      status: judge(entry.name, r, entry),
      ...sizes(r, entry),
      lazyGzipBytes: r.lazyGzip,
      modules: r.inputs,
    })
    if (r.allLoaded) {
      const a = entry.allLoaded
      rows.push({
        name: a.name,
        of: entry.name,
        status: judge(`${entry.name}, all loaded in normal use`, r.allLoaded, a),
        ...sizes(r.allLoaded, a),
        lazyChunks: r.allLoaded.chunks,
      })
    }
    for (const g of r.groups ?? []) {
      // Groups with limits are judged (all loaded + their chunks); the others are reported.
      const limited = g.budget !== undefined
      rows.push({
        name: g.name ?? `  · + ${g.what}`,
        of: entry.name,
        status: limited ? judge(`${entry.name} with the ${g.what} chunks`, g, g) : 'info',
        ...sizes(g, limited ? g : undefined),
        // The group's chunks alone.
        groupGzipBytes: g.groupGzip,
        groupChunks: g.chunks,
      })
    }
  }

  const w = Math.max(...rows.map((r) => r.name.length))
  console.log(
    '\nBrowser bundles (esbuild, platform browser, minified, split; gzip level 9; up-front cost, lazy chunks apart)',
  )
  console.log(
    `  ${'entry'.padEnd(w)}  ${'min'.padStart(10)}  ${'served'.padStart(10)}  ${'files'.padStart(5)}  ${'one stream'.padStart(10)}  ${'budget'.padStart(9)}  status`,
  )
  for (const r of rows) {
    const cells =
      r.minBytes === undefined
        ? ['', '', '', '', '']
        : [
            fmt(r.minBytes),
            fmt(r.servedGzipBytes),
            String(r.files),
            fmt(r.gzipBytes),
            r.budgetGzipBytes === undefined ? '' : fmt(r.budgetGzipBytes),
          ]
    const widths = [10, 10, 5, 10, 9]
    const line = cells.map((c, i) => c.padStart(widths[i])).join('  ')
    const group =
      r.groupGzipBytes === undefined
        ? ''
        : ` (${fmt(r.groupGzipBytes)} in ${r.groupChunks} lazy chunks)`
    const loaded = r.lazyChunks === undefined ? '' : ` (${r.lazyChunks} lazy chunks)`
    const lazy = r.lazyGzipBytes ? ` (+ ${fmt(r.lazyGzipBytes)} lazy)` : ''
    console.log(`  ${r.name.padEnd(w)}  ${line}  ${r.status}${group}${loaded}${lazy}`)
  }

  for (const note of notes) console.log(`  ${note}`)
  console.log(
    `  ✓ ${withoutOtel} bundles hold no OpenTelemetry code (@opentelemetry/api is optional)`,
  )

  const outDir = path.join(root, '.tmp')
  mkdirSync(outDir, { recursive: true })
  writeFileSync(
    path.join(outDir, 'bundle-sizes.json'),
    `${JSON.stringify({ generated: new Date().toISOString(), gzipLevel: 9, entries: rows }, null, 2)}\n`,
  )
  console.log('  (written to .tmp/bundle-sizes.json)')
  return !failed
}

/** `imports` file targets (no globs) of the package that its tarball lacks. */
function missingTargets(pkg, packed) {
  const targets = []
  const walk = (node, where) => {
    if (typeof node === 'string') {
      if (node.startsWith('./') && !node.includes('*')) targets.push([node, where])
    } else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        // The source condition points at src/, which is never published.
        if (k !== SOURCE_CONDITION) walk(v, `${where}[${JSON.stringify(k)}]`)
      }
    }
  }
  walk(pkg.imports, 'pkg.imports')
  return targets
    .filter(([file]) => !packed.fileExists(`/node_modules/${pkg.name}/${file.slice(2)}`))
    .map(([file, where]) => `${where} = ${file} is not in the tarball`)
}

/**
 * Pack every package as `npm publish` would (prepack included) into .tmp/pack. One
 * `npm pack --workspaces` rather than one npm per package: on a small machine the ten npm
 * start-ups, not the packing, are the cost.
 */
async function packAll() {
  const dest = path.join(root, '.tmp', 'pack')
  rmSync(dest, { recursive: true, force: true })
  mkdirSync(dest, { recursive: true })
  const { stdout } = await execFileAsync(
    'npm',
    ['pack', '--workspaces', '--json', '--loglevel=error', '--pack-destination', dest],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  )
  return JSON.parse(stdout).map((t) => ({
    name: t.name,
    tarball: new Uint8Array(readFileSync(path.join(dest, t.filename))),
  }))
}

/**
 * are-the-types-wrong with the `esm-only` profile of its CLI (`attw --profile esm-only`): a
 * problem counts only if it shows under `node16-esm` or `bundler` resolution. Every package is
 * ESM only ("type": "module", exports with `types` + `default`/`node`, no `require`), so `require`
 * from CJS (`node16-cjs`) and the pre-exports `node10` resolution fail by design. The root
 * `.attw.json` gives the CLI the same profile, so `npx attw --pack packages/<name>` agrees.
 */
const ATTW_IGNORED = new Set(['node10', 'node16-cjs'])
const ATTW_CHECKED = ['node16-esm', 'bundler']

async function attwProblems(packed, pkg) {
  // A package with neither `exports` nor `main` (the CLI: a bin only) offers nothing to import.
  if (pkg.exports === undefined && pkg.main === undefined) return { skipped: true, problems: [] }
  const result = await checkPackage(packed)
  if (!result.types) return { skipped: false, problems: ['no type declarations in the package'] }
  const problems = result.problems.filter((p) =>
    p.resolutionKind
      ? !ATTW_IGNORED.has(p.resolutionKind)
      : ATTW_CHECKED.some((kind) => problemAffectsResolutionKind(p, kind, result)),
  )
  return {
    skipped: false,
    problems: problems.map(
      (p) =>
        `${problemKindInfo[p.kind].title} (${p.kind})${p.entrypoint ? ` at ${p.entrypoint}` : ''}${p.resolutionKind ? ` under ${p.resolutionKind}` : ''}`,
    ),
  }
}

/**
 * publint and are-the-types-wrong on each package's tarball, so both judge exactly what
 * `npm publish` uploads. src/, where every entry's `@agentmsg/source` condition points, is not
 * in it: neither tool resolves that condition (attw tries `types`, `import`/`require`, `node`),
 * as no consumer does unless its own tooling names it (tsup.config.ts).
 */
async function checkPackages() {
  const started = performance.now()
  const tarballs = await packAll()
  const packedMs = performance.now() - started
  let failed = false
  console.log('\npublint + are-the-types-wrong (esm-only profile) on the packed tarballs')
  for (const { name, tarball } of tarballs) {
    const packed = createPackageFromTarballData(tarball)
    const { messages, pkg } = await publint({
      pack: { tarball: tarball.buffer },
      level: 'suggestion',
    })
    const errors = messages.filter((m) => m.type === 'error')
    // publint checks `exports` targets but not `imports` ones (`#crypto-default` branches).
    const missing = missingTargets(pkg, packed)
    const attw = await attwProblems(packed, pkg)
    const nErrors = errors.length + missing.length + attw.problems.length
    if (nErrors > 0) failed = true
    console.log(
      `  ${nErrors > 0 ? '✗' : '✓'} ${name}: ${nErrors} error(s), ${messages.length - errors.length} warning(s)/suggestion(s)${attw.skipped ? ' (attw: no types to check, bin only)' : ''}`,
    )
    for (const t of missing) console.log(`      error: ${t}`)
    for (const m of messages) {
      console.log(`      ${m.type}: ${formatMessage(m, pkg, { color: false }) ?? m.code}`)
    }
    for (const p of attw.problems) console.log(`      attw: ${p}`)
  }
  console.log(
    `  (packed in ${(packedMs / 1000).toFixed(1)} s, checked in ${((performance.now() - started - packedMs) / 1000).toFixed(1)} s)`,
  )
  return !failed
}

const sizesOk = await checkSizes()
const packagesOk = await checkPackages()
if (!sizesOk || !packagesOk) {
  console.error('\ncheck-build: FAILED (see ✗ above)')
  process.exit(1)
}
console.log('\ncheck-build: ok')
