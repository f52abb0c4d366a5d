/**
 * The rows of the postgres section (postgres-proc.mjs) from its rounds: each case's median,
 * beside its baseline case of the same run (PostgreSQL 1 node beside SQLite, 3 nodes beside
 * PostgreSQL 1 node), the ratio the median of the rounds' paired ratios.
 */
import { median, pairedRow } from './harness.mjs'

/** How busy the machine was in case `c`, and how much of that was not this benchmark. */
function busyText(rs, c) {
  const busy = median(rs.map((r) => r[c].machineBusy))
  const other = median(rs.map((r) => r[c].otherCores))
  return `${Math.round(busy * 100)}% (others ${other.toFixed(2)} cores)`
}

/** The PostgreSQL server's CPU per durable publish, µs, at most. */
const POSTGRES_US_TARGET = 300

/** Durable publish: `rs` rounds of {sqlite, pg1, pg3} publishRun results. */
export function publishRows(rs, { bytes, concurrency }) {
  const m = (f) => median(rs.map(f))
  const busy = (c) => busyText(rs, c)
  const cores = (c) => m((r) => r[c].postgresCores).toFixed(2)
  // Requests with no answer at all (socket errors), summed over the rounds.
  const lost = (c) => rs.reduce((n, r) => n + (r[c].lost ?? 0), 0)
  const sqliteName = 'SQLite, 1 relay process'
  const pg1Name = 'PostgreSQL, 1 relay process'
  return [
    pairedRow(rs, 'pg1', 'sqlite', 'rps', {
      name: `durable publish, ${bytes} B direct, ${concurrency} in flight, PostgreSQL 1 node (median of ${rs.length}; machine busy ${busy('pg1')} vs ${busy('sqlite')}; unanswered ${lost('pg1')} vs ${lost('sqlite')})`,
      unit: 'msg/s',
      baselineName: sqliteName,
      target: '≥ 0.8×',
    }),
    pairedRow(rs, 'pg3', 'pg1', 'rps', {
      name: `durable publish, PostgreSQL 3 nodes (requests round-robin; machine busy ${busy('pg3')}; unanswered ${lost('pg3')})`,
      unit: 'msg/s',
      baselineName: pg1Name,
      target: '≥ 1.0× (2 cores shared by all)',
    }),
    pairedRow(rs, 'pg1', 'sqlite', 'relayUs', {
      name: 'relay processes CPU per publish (all nodes, all threads), PostgreSQL 1 node',
      unit: 'µs/msg',
      baselineName: sqliteName,
      target: 'context (lower is better)',
    }),
    pairedRow(rs, 'pg3', 'pg1', 'relayUs', {
      name: 'relay processes CPU per publish, PostgreSQL 3 nodes',
      unit: 'µs/msg',
      baselineName: pg1Name,
      target: 'context (lower is better)',
    }),
    {
      name: `PostgreSQL CPU per publish, 1 node (its processes serving the relay; ${cores('pg1')} cores)`,
      value: m((r) => r.pg1.postgresUs),
      unit: 'µs/msg',
      target: `≤ ${POSTGRES_US_TARGET} µs`,
      verdict: m((r) => r.pg1.postgresUs) <= POSTGRES_US_TARGET ? 'met' : 'missed',
    },
    pairedRow(rs, 'pg3', 'pg1', 'postgresUs', {
      name: `PostgreSQL server CPU per publish, 3 nodes (${cores('pg3')} cores vs ${cores('pg1')})`,
      unit: 'µs/msg',
      baselineName: pg1Name,
      target: 'context (lower is better)',
    }),
    pairedRow(rs, 'pg1', 'sqlite', 'perCommit', {
      name: 'publishes per write transaction (group commit, warm-up included), PostgreSQL 1 node',
      unit: '',
      baselineName: sqliteName,
      target: 'context',
    }),
    pairedRow(rs, 'pg3', 'pg1', 'perCommit', {
      name: 'publishes per write transaction, PostgreSQL 3 nodes (all nodes)',
      unit: '',
      baselineName: pg1Name,
      target: 'context (writers lock only the mailboxes they write)',
    }),
    pairedRow(rs, 'pg3', 'pg1', 'benchUs', {
      name: 'all CPU of the benchmark per publish (relays + PostgreSQL + load generator), 3 nodes',
      unit: 'µs/msg',
      baselineName: pg1Name,
      target: 'context (what 2 cores must carry)',
    }),
  ]
}

/** Publish→push at `rate`/s: `rs` rounds of {sqlite, pg1, pg3} latencyRun results. */
export function latencyRows(rs, rate) {
  const got = (c) => rs.map((r) => `${r[c].delivered}/${r[c].sent}`).join(', ')
  const busy = (c) => busyText(rs, c)
  const row = (name, c, base, baselineName, p, fields = { target: 'context' }) =>
    pairedRow(rs, c, base, p, { name, unit: 'ms', baselineName, ...fields })
  // The relay pushes before its commit (protocol decision 34): at 300/s one node stays quick.
  const pg1p50 = median(rs.map((r) => r.pg1.p50))
  const target = rate === 300 && {
    target: 'p50 ≤ 10 ms',
    verdict: pg1p50 <= 10 ? 'met' : 'missed',
  }
  const sqliteName = 'SQLite, 1 node'
  const pg1Name = 'PostgreSQL, 1 node'
  const cross = `${rate}/s, PostgreSQL 3 nodes, published on nodes 1–2, streamed from node 0`
  return [
    row(
      `publish→push p50, WebSocket, ${rate}/s, PostgreSQL 1 node (median of ${rs.length}; delivered ${got('pg1')}; machine busy ${busy('pg1')} vs ${busy('sqlite')})`,
      'pg1',
      'sqlite',
      sqliteName,
      'p50',
      target || undefined,
    ),
    row(`publish→push p99, ${rate}/s, PostgreSQL 1 node`, 'pg1', 'sqlite', sqliteName, 'p99'),
    row(
      `publish→push p50, ${cross} (delivered ${got('pg3')}; machine busy ${busy('pg3')})`,
      'pg3',
      'pg1',
      pg1Name,
      'p50',
    ),
    row(`publish→push p99, ${cross}`, 'pg3', 'pg1', pg1Name, 'p99'),
  ]
}
