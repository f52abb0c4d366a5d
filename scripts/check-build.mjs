#!/usr/bin/env node
/**
 * Post-build guard, run by `npm run build` after tsup: checks only the built output can answer.
 *
 * 1. Bundle every browser-facing entry of the built packages with esbuild for the browser
 *    (`platform: 'browser'`, condition `browser`, minified) and fail if any Node built-in is
 *    reached: a `node:` import in an isomorphic entry breaks every browser consumer, and some
 *    bundlers only stub it and fail at run time.
 * 2. Report minified and min+gzip (level 9) sizes, note (as information) an entry past its
 *    budget and fail above its hard cap. An entry with a `lazyGroup` also gets a row for its
 *    up-front code plus the lazy chunks of that group (e.g. the sealed-box chunks a page loads
 *    on its first seal or open), and fails if any of the group's code is loaded up front. The
 *    table is also written to `.tmp/bundle-sizes.json` for the bench.
 * 3. Run publint on every package; errors fail, warnings and suggestions are printed.
 *
 * Add a row to BROWSER_ENTRIES when a package gains a browser-facing entry.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const KB = 1024

/**
 * Browser-facing entries. `file` is bundled as is (all its exports kept); `contents` is a virtual
 * entry resolved from the repository root, for "what an app that uses only these pays".
 * A row whose package directory does not exist yet is reported as skipped; once the package
 * exists, a missing dist file is an error.
 * `budget` (gzip bytes) is noted as information when passed; `cap` (gzip bytes) fails the build.
 */
const BROWSER_ENTRIES = [
  {
    name: '@agentmsg/core',
    pkg: 'packages/core',
    file: 'packages/core/dist/index.js',
    // The whole barrel (identity documents, resolvers, trust state, noble fallback): what an app
    // pays that imports everything. Guards growth; the issue's figure is the next row.
    budget: 30 * KB,
    cap: 40 * KB,
  },
  {
    // The figure the issue asks for: signing, verifying, did:key and JCS only (aim 15 KB).
    name: 'core: sign+verify+did:key+canonicalize',
    pkg: 'packages/core',
    contents: `export {
  signMessage, verifyMessage, didKeyFromPublicKey, publicKeyFromDidKey, canonicalize,
} from '@agentmsg/core'`,
    budget: 15 * KB,
    cap: 20 * KB,
  },
  {
    // Byte/text encodings and cloneJsonValue, for transports, relays and Storage adapters.
    name: '@agentmsg/core/encoding',
    pkg: 'packages/core',
    file: 'packages/core/dist/encoding.js',
    budget: 5 * KB,
    cap: 8 * KB,
  },
  {
    // Relay agent auth, shared by the relay client and server (with `structured-headers`);
    // 23.4 KB from source, most of it the platform crypto provider.
    name: '@agentmsg/core/http-signature',
    pkg: 'packages/core',
    file: 'packages/core/dist/http-signature.js',
    budget: 25 * KB,
    cap: 32 * KB,
  },
  {
    // Sealed boxes (PROFILE §8): X25519 (@noble/curves), XSalsa20-Poly1305 (@noble/ciphers),
    // BLAKE2b, and the Ed25519 → X25519 map shared with the did:key documents (@noble/ed25519).
    // Only apps that seal or open pay for it: 28.6 KB alone (about 11 KB of it JCS, strict JSON
    // and encodings shared with the root entry); the relay-only agent below must not import it.
    name: '@agentmsg/core/sealed-box',
    pkg: 'packages/core',
    file: 'packages/core/dist/sealed-box.js',
    budget: 30 * KB,
    cap: 34 * KB,
  },
  {
    // The sender and the web-standard inbox handler; `./node` is Node-only by design.
    name: '@agentmsg/transport-https',
    pkg: 'packages/transport-https',
    file: 'packages/transport-https/dist/index.js',
    budget: 30 * KB,
    cap: 45 * KB,
  },
  {
    name: '@agentmsg/transport-relay (client)',
    pkg: 'packages/transport-relay',
    file: 'packages/transport-relay/dist/index.js',
    budget: 25 * KB,
    cap: 35 * KB,
  },
  {
    name: '@agentmsg/client',
    pkg: 'packages/client',
    file: 'packages/client/dist/index.js',
    budget: 40 * KB,
    cap: 60 * KB,
  },
  {
    // The figure the issue asks for: a browser agent that only uses relays. The https sender,
    // outbox and identity fetcher (with ky) are imported lazily by the client and count as lazy.
    name: 'browser relay-only agent (client + core + relay client + IndexedDB)',
    pkg: 'packages/client',
    contents: `export { createAgent } from '@agentmsg/client'
export { indexedDbStorage } from '@agentmsg/storage-indexeddb'`,
    budget: 25 * KB,
    // 32.8 KB before the one receive pipeline; 38.3 KB after it (the agent's relay path runs
    // core's receiver: persist before ack, bounded queue, error replies; RFC 9421 fields through
    // structured-headers); 40.0 KB with the hardening (per-message envelope parsing with byte
    // caps, batched acks, integer-literal checks); 40.5 KB with the sealed-body check (opening is
    // a lazy chunk); 41.5 KB with sealing on send (the route decision; sealing is lazy too, see
    // the next row). The budget stays the target.
    cap: 42 * KB,
    // Sealing on send (PROFILE §8, sealed by default through untrusted relays) and opening on
    // receive import `@agentmsg/core/sealed-box` lazily: the row above is what the page loads up
    // front, WITHOUT it (a failure if any of it is there); this one is WITH it, after the first
    // seal or open (the sealing and opening chunks and every chunk they import).
    lazyGroup: {
      name: '  └ with the sealed-box chunks (loaded on the first seal or open)',
      what: 'sealed-box',
      // XSalsa20-Poly1305 is used by sealed boxes only, so a chunk that reaches it is theirs.
      marker: /^node_modules\/@noble\/ciphers\//,
      // 66.1 KB when added (41.5 up front + 25.1 KB in 4 chunks: XSalsa20-Poly1305, X25519,
      // BLAKE2b, Ed25519 → X25519). Budget: the two targets added (25 + 30 KB).
      budget: 55 * KB,
      cap: 72 * KB,
    },
  },
  {
    name: '@agentmsg/storage-indexeddb',
    pkg: 'packages/storage-indexeddb',
    file: 'packages/storage-indexeddb/dist/index.js',
    budget: 5 * KB,
    cap: 10 * KB,
  },
]

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
  const sum = (names) => {
    const bytes = Buffer.concat(names.map((n) => Buffer.from(contents.get(n) ?? new Uint8Array())))
    return { min: bytes.length, gzip: bytes.length ? gzipSync(bytes, { level: 9 }).length : 0 }
  }
  const js = Object.keys(outputs).filter((k) => k.endsWith('.js'))
  const first = sum([...initial])
  const lazy = sum(js.filter((k) => !initial.has(k)))
  const row = {
    min: first.min,
    gzip: first.gzip,
    lazyGzip: lazy.gzip,
    inputs: Object.keys(result.metafile.inputs).length,
  }
  if (!entry.lazyGroup) return row
  const { marker } = entry.lazyGroup
  const marked = (chunks) =>
    [...chunks].flatMap((c) => Object.keys(outputs[c].inputs)).filter((i) => marker.test(i))
  const upFront = marked(initial)
  if (upFront.length > 0) {
    return {
      error: `loads ${entry.lazyGroup.what} code up front (it must be a lazy chunk): ${[...new Set(upFront)].join(', ')}`,
    }
  }
  // The group: every import() target whose static closure reaches the marker, with that closure.
  const group = new Set(initial)
  for (const target of lazyOnes) {
    const closure = staticClosure(outputs, [target])
    if (marked(closure).length > 0) for (const c of closure) group.add(c)
  }
  if (group.size === initial.size) {
    return { error: `no lazy chunk reaches ${marker} (${entry.lazyGroup.what})` }
  }
  const withGroup = sum([...group])
  const only = sum([...group].filter((k) => !initial.has(k)))
  return {
    ...row,
    group: {
      min: withGroup.min,
      gzip: withGroup.gzip,
      groupGzip: only.gzip,
      chunks: group.size - initial.size,
      lazyGzip: sum(js.filter((k) => !group.has(k))).gzip,
    },
  }
}

/** `start` and every output chunk they import statically, transitively. */
function staticClosure(outputs, start) {
  const seen = new Set()
  const walk = (out) => {
    if (seen.has(out)) return
    seen.add(out)
    for (const imp of outputs[out].imports) if (imp.kind === 'import-statement') walk(imp.path)
  }
  for (const s of start) walk(s)
  return seen
}

/** Output chunks some chunk loads with import(). */
function lazyTargets(outputs) {
  const targets = new Set()
  for (const out of Object.values(outputs)) {
    for (const imp of out.imports) if (imp.kind === 'dynamic-import') targets.add(imp.path)
  }
  return targets
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
    const judge = (name, gzip, limits) => {
      if (gzip > limits.cap) {
        failed = true
        notes.push(`✗ ${name}: ${fmt(gzip)} min+gzip is above the hard cap of ${fmt(limits.cap)}`)
        return 'FAIL'
      }
      if (gzip > limits.budget) {
        // Information, not an error: the build passes below the cap; the budget only marks
        // growth worth a look.
        notes.push(
          `ℹ ${name}: ${fmt(gzip)} min+gzip, ${fmt(gzip - limits.budget)} past its ${fmt(limits.budget)} budget, within the ${fmt(limits.cap)} cap (information: the build passes)`,
        )
        return 'ok, past budget'
      }
      return 'ok'
    }
    rows.push({
      name: entry.name,
      status: judge(entry.name, r.gzip, entry),
      minBytes: r.min,
      gzipBytes: r.gzip,
      budgetGzipBytes: entry.budget,
      capGzipBytes: entry.cap,
      lazyGzipBytes: r.lazyGzip,
      modules: r.inputs,
    })
    if (r.group) {
      const g = entry.lazyGroup
      rows.push({
        name: g.name,
        of: entry.name,
        status: judge(`${entry.name} with the ${g.what} chunks`, r.group.gzip, g),
        minBytes: r.group.min,
        gzipBytes: r.group.gzip,
        budgetGzipBytes: g.budget,
        capGzipBytes: g.cap,
        // The group's chunks alone, and what stays lazy after them.
        groupGzipBytes: r.group.groupGzip,
        groupChunks: r.group.chunks,
        lazyGzipBytes: r.group.lazyGzip,
      })
    }
  }

  const w = Math.max(...rows.map((r) => r.name.length))
  console.log(
    '\nBrowser bundles (esbuild, platform browser, minified, split; gzip level 9; up-front cost, lazy chunks apart)',
  )
  console.log(
    `  ${'entry'.padEnd(w)}  ${'min'.padStart(10)}  ${'min+gzip'.padStart(10)}  ${'budget'.padStart(9)}  status`,
  )
  for (const r of rows) {
    const sizes =
      r.minBytes === undefined
        ? `${''.padStart(10)}  ${''.padStart(10)}  ${''.padStart(9)}`
        : `${fmt(r.minBytes).padStart(10)}  ${fmt(r.gzipBytes).padStart(10)}  ${fmt(r.budgetGzipBytes).padStart(9)}`
    const group =
      r.groupGzipBytes === undefined
        ? ''
        : ` (${fmt(r.groupGzipBytes)} in ${r.groupChunks} lazy chunks)`
    const lazy = r.lazyGzipBytes ? ` (+ ${fmt(r.lazyGzipBytes)} lazy)` : ''
    console.log(`  ${r.name.padEnd(w)}  ${sizes}  ${r.status}${group}${lazy}`)
  }

  for (const note of notes) console.log(`  ${note}`)

  const outDir = path.join(root, '.tmp')
  mkdirSync(outDir, { recursive: true })
  writeFileSync(
    path.join(outDir, 'bundle-sizes.json'),
    `${JSON.stringify({ generated: new Date().toISOString(), gzipLevel: 9, entries: rows }, null, 2)}\n`,
  )
  console.log('  (written to .tmp/bundle-sizes.json)')
  return !failed
}

/** `imports` file targets (no globs) of the package that are not on disk. */
function missingTargets(pkgDir) {
  const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'))
  const targets = []
  const walk = (node, where) => {
    if (typeof node === 'string') {
      if (node.startsWith('./') && !node.includes('*')) targets.push([node, where])
    } else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) walk(v, `${where}[${JSON.stringify(k)}]`)
    }
  }
  walk(pkg.imports, 'pkg.imports')
  return targets
    .filter(([file]) => !existsSync(path.join(pkgDir, file)))
    .map(([file, where]) => `${where} = ${file}`)
}

async function checkPublint() {
  let failed = false
  const dirs = readdirSync(path.join(root, 'packages'), { withFileTypes: true })
    .filter(
      (d) => d.isDirectory() && existsSync(path.join(root, 'packages', d.name, 'package.json')),
    )
    .map((d) => path.join(root, 'packages', d.name))
  console.log('\npublint')
  for (const pkgDir of dirs) {
    const rel = path.relative(root, pkgDir)
    const { messages, pkg } = await publint({ pkgDir, level: 'suggestion', pack: 'npm' })
    const errors = messages.filter((m) => m.type === 'error')
    // publint checks `exports` targets but not `imports` ones (`#crypto-default` branches).
    const missing = missingTargets(pkgDir)
    const nErrors = errors.length + missing.length
    if (nErrors > 0) failed = true
    console.log(
      `  ${nErrors > 0 ? '✗' : '✓'} ${rel}: ${nErrors} error(s), ${messages.length - errors.length} warning(s)/suggestion(s)`,
    )
    for (const t of missing) console.log(`      error: ${t} does not exist`)
    for (const m of messages) {
      console.log(`      ${m.type}: ${formatMessage(m, pkg, { color: false }) ?? m.code}`)
    }
  }
  return !failed
}

const sizesOk = await checkSizes()
const publintOk = await checkPublint()
if (!sizesOk || !publintOk) {
  console.error('\ncheck-build: FAILED (see ✗ above)')
  process.exit(1)
}
console.log('\ncheck-build: ok')
