// `npm run bench`: every figure beside a baseline measured in the same run, as a ratio, and a
// machine-readable summary in .tmp/bench-summary.json. Run after `npm run build` (the npm
// script does it): benchmarks import the built packages.
//
//   npm run bench [-- SECTION ...]   sections: core sealed-box inbox relay postgres load a2a
//                                    scale cold-start
//                                    (the one-process benches: inbox-inprocess relay-inprocess)
//   BENCH_RUNS=N         rounds of each separate-process row (default 3; medians reported)
//   BENCH_LOAD_SECONDS=S duration of the relay load test (default 60)
//   BENCH_PG_RUNS=N      rounds of the postgres section (default 2: it runs 6 cases a round)
//   BENCH_A2A_FILES=1    the a2a section also runs its agents on storage-fs
//   BENCH_SCALE_N=1000,5000,20000  idle streams the scale section holds on one relay node, in
//                        turn (each process needs N + 4096 open files: raised with prlimit as
//                        root, else run `ulimit -n` first)
//   AGENTMSG_TEST_POSTGRES_URL  the postgres section's server (default
//                        postgres://postgres@127.0.0.1:5432/test; a fresh schema per run)
//
// The inbox and relay rows run server, publisher and subscribers as separate processes
// (bench/proc/): the costs a user pays. Read the ratios, not the absolutes: the host is shared.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import * as core from '@agentmsg/core'
import { benchCanonicalize } from './canonicalize.mjs'
import { printTable, targetVerdict } from './lib.mjs'
import { benchSignVerify } from './sign-verify.mjs'

const only = process.argv.slice(2)
const DEFAULT = [
  'core',
  'sealed-box',
  'inbox',
  'relay',
  'postgres',
  'load',
  'a2a',
  'scale',
  'cold-start',
]
const want = (name) => (only.length === 0 ? DEFAULT.includes(name) : only.includes(name))
const runs = Number(process.env.BENCH_RUNS ?? 3)
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

const summary = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}`,
  loadAtStart: load(),
  runs,
  tables: [],
}

/** Print a table and keep it, each row with its verdict, for the summary. */
function table(title, rows) {
  printTable(title, rows)
  summary.tables.push({
    title,
    load: load(),
    rows: rows.map((r) => ({
      ...r,
      verdict: r.verdict ?? (targetVerdict(r.ratio, r.target) || undefined),
    })),
  })
}

console.log(
  `# agentmsg benchmarks — node ${process.version}, ${summary.cpus}, load ${summary.loadAtStart}`,
)
console.log(`crypto provider: ${core.getDefaultCryptoProvider().name}`)

if (want('core')) {
  const sv = await benchSignVerify()
  table(
    `sign/verify (${sv.bytes} B message) vs raw node:crypto Ed25519 with a reused KeyObject`,
    sv.rows,
  )

  const canon = await benchCanonicalize(core)
  table(
    'canonicalize (RFC 8785) vs JSON.stringify of the same value',
    canon.map((r) => ({
      name: r.name,
      value: r.mbPerSec,
      unit: 'MB/s',
      baseline: r.baselineMbPerSec,
      baselineName: 'JSON.stringify',
      ratio: r.ratio,
      target: '≥ 0.4×',
    })),
  )
}

if (want('sealed-box')) {
  const { benchSealedBox } = await import('./sealed-box.mjs')
  table(
    'sealed box (PROFILE §8) seal / open vs libsodium-wrappers (WebAssembly), same keys',
    await benchSealedBox(),
  )
  const { benchBrowserSealedBox } = await import('./browser-sealed-box.mjs')
  table(
    'sealed box in Chromium vs libsodium-wrappers in the same page',
    await benchBrowserSealedBox(),
  )
}

if (want('inbox')) {
  const { benchProcInbox } = await import('./proc/inbox-proc.mjs')
  const { rows } = await benchProcInbox({ runs })
  table('inbox over HTTPS — server and load generator in separate processes', rows)
}

if (
  (want('inbox') || want('inbox-inprocess')) &&
  existsSync(new URL('./inbox.mjs', import.meta.url))
) {
  const { benchInbox } = await import('./inbox.mjs')
  table('inbox over HTTPS, full pipeline (one process: context)', await benchInbox())
}

if (want('relay')) {
  const { benchRelayStore } = await import('./relay-store.mjs')
  table(
    'relay store (SQLite, durable) vs raw better-sqlite3 with the same batching',
    await benchRelayStore(),
  )
  const { benchProcRelay } = await import('./proc/relay-proc.mjs')
  const { rows } = await benchProcRelay({ runs })
  table('relay over HTTPS — server, publisher and subscriber in separate processes', rows)
}

if (want('postgres')) {
  const { benchProcPostgres } = await import('./proc/postgres-proc.mjs')
  try {
    const pg = await benchProcPostgres({ runs: Number(process.env.BENCH_PG_RUNS ?? 2) })
    const where = 'relay, publisher and subscriber in separate processes'
    table(
      `relay on PostgreSQL vs SQLite, 1 and 3 nodes: durable publish (${where})`,
      pg.publishRows,
    )
    table('relay on PostgreSQL vs SQLite, 1 and 3 nodes: publish→push latency', pg.latencyRows)
    summary.postgresRounds = pg.rounds
  } catch (error) {
    // The other sections still run; the run fails.
    console.log(`\n## relay on PostgreSQL: FAILED\n${error.stack ?? error}`)
    summary.postgresError = String(error.message ?? error)
    process.exitCode = 1
  }
}

if (want('a2a')) {
  const { benchA2A } = await import('./a2a.mjs')
  const a2a = await benchA2A({ runs, files: !!process.env.BENCH_A2A_FILES })
  table(
    'A2A over agentmsg (serveA2A, relay, agentmsgTransportFactory) vs a2a-js JSON-RPC over HTTPS, separate processes',
    a2a.rows,
  )
  summary.a2aRounds = a2a.rounds
}

if (want('scale')) {
  const { benchScale } = await import('./proc/scale.mjs')
  const ns = (process.env.BENCH_SCALE_N ?? '1000,5000,20000').split(',').map(Number)
  const { rows, loads } = await benchScale({ ns })
  table(`connection scale: idle streams on one relay node (load ${loads.join(' / ')})`, rows)
}

if (want('relay-inprocess')) {
  const { benchRelay } = await import('./relay.mjs')
  table('relay over HTTPS (one process: context)', await benchRelay())
}

if (want('load')) {
  const { loadTest, printLoadTest } = await import('./proc/load-test.mjs')
  const r = await loadTest({ duration: Number(process.env.BENCH_LOAD_SECONDS ?? 60) })
  printLoadTest(r)
  summary.loadTest = r
  if (!r.ok) process.exitCode = 1
}

if (want('cold-start')) {
  const { benchBrowserColdStart } = await import('./browser-cold-start.mjs')
  table(
    'browser cold start: relay-only agent in Chromium, loopback relay (SQLite, TLS), page bundle split and gzipped as served',
    await benchBrowserColdStart(),
  )
}

const sizes = new URL('../.tmp/bundle-sizes.json', import.meta.url)
if (existsSync(sizes)) {
  const rows = JSON.parse(readFileSync(sizes, 'utf8'))
  console.log('\n## browser bundle sizes (from the build: esbuild, minified, gzip -9)')
  console.log(JSON.stringify(rows, null, 2))
  summary.bundleSizes = rows
}

summary.loadAtEnd = load()
const out = new URL('../.tmp/bench-summary.json', import.meta.url)
mkdirSync(new URL('.', out), { recursive: true })
writeFileSync(out, `${JSON.stringify(summary, null, 2)}\n`)
console.log(`\nsummary: .tmp/bench-summary.json (load at end ${summary.loadAtEnd})`)
// README's table only from a run of every section (scripts/perf-table.mjs): a partial run
// (`npm run bench -- core`) leaves it as it is; `npm run bench:table` rewrites it on demand.
if (only.length === 0 && !process.exitCode) {
  const { writeReadmeTable } = await import('../scripts/perf-table.mjs')
  console.log(`README.md performance table ${writeReadmeTable() ? 'rewritten' : 'unchanged'}`)
}
