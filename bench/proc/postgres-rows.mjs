/**
 * The rows of the postgres section (postgres-proc.mjs) from its rounds: each case's median,
 * beside its baseline case of the same run (PostgreSQL 1 node beside SQLite, 3 nodes beside
 * PostgreSQL 1 node), the ratio the median of the rounds' paired ratios.
 */
import { median } from './harness.mjs'

/** How busy the machine was in case `c`, and how much of that was not this benchmark. */
function busyText(rs, c) {
  const busy = median(rs.map((r) => r[c].machineBusy))
  const other = median(rs.map((r) => r[c].otherCores))
  return `${Math.round(busy * 100)}% (others ${other.toFixed(2)} cores)`
}

/** Durable publish: `rs` rounds of {sqlite, pg1, pg3} publishRun results. */
export function publishRows(rs, { bytes, concurrency }) {
  const m = (f) => median(rs.map(f))
  const busy = (c) => busyText(rs, c)
  const cores = (c) => m((r) => r[c].postgresCores).toFixed(2)
  const sqliteName = 'SQLite, 1 relay process'
  const pg1Name = 'PostgreSQL, 1 relay process'
  return [
    {
      name: `durable publish, ${bytes} B direct, ${concurrency} in flight, PostgreSQL 1 node (median of ${rs.length}; machine busy ${busy('pg1')} vs ${busy('sqlite')})`,
      value: m((r) => r.pg1.rps),
      unit: 'msg/s',
      baseline: m((r) => r.sqlite.rps),
      baselineName: sqliteName,
      ratio: m((r) => r.pg1.rps / r.sqlite.rps),
      target: 'context',
    },
    {
      name: `durable publish, PostgreSQL 3 nodes (requests round-robin; machine busy ${busy('pg3')})`,
      value: m((r) => r.pg3.rps),
      unit: 'msg/s',
      baseline: m((r) => r.pg1.rps),
      baselineName: pg1Name,
      ratio: m((r) => r.pg3.rps / r.pg1.rps),
      target: 'context (2 cores shared by all)',
    },
    {
      name: 'relay processes CPU per publish (all nodes, all threads), PostgreSQL 1 node',
      value: m((r) => r.pg1.relayUs),
      unit: 'µs/msg',
      baseline: m((r) => r.sqlite.relayUs),
      baselineName: sqliteName,
      ratio: m((r) => r.pg1.relayUs / r.sqlite.relayUs),
      target: 'context (lower is better)',
    },
    {
      name: 'relay processes CPU per publish, PostgreSQL 3 nodes',
      value: m((r) => r.pg3.relayUs),
      unit: 'µs/msg',
      baseline: m((r) => r.pg1.relayUs),
      baselineName: pg1Name,
      ratio: m((r) => r.pg3.relayUs / r.pg1.relayUs),
      target: 'context (lower is better)',
    },
    {
      name: `PostgreSQL server CPU per publish, 3 nodes (${cores('pg3')} cores vs ${cores('pg1')})`,
      value: m((r) => r.pg3.postgresUs),
      unit: 'µs/msg',
      baseline: m((r) => r.pg1.postgresUs),
      baselineName: pg1Name,
      ratio: m((r) => r.pg3.postgresUs / r.pg1.postgresUs),
      target: 'context (lower is better)',
    },
    {
      name: 'publishes per write transaction (group commit, warm-up included), PostgreSQL 1 node',
      value: m((r) => r.pg1.perCommit),
      unit: '',
      baseline: m((r) => r.sqlite.perCommit),
      baselineName: sqliteName,
      ratio: m((r) => r.pg1.perCommit / r.sqlite.perCommit),
      target: 'context',
    },
    {
      name: 'publishes per write transaction, PostgreSQL 3 nodes (all nodes)',
      value: m((r) => r.pg3.perCommit),
      unit: '',
      baseline: m((r) => r.pg1.perCommit),
      baselineName: pg1Name,
      ratio: m((r) => r.pg3.perCommit / r.pg1.perCommit),
      target: 'context (writers take turns on one lock)',
    },
    {
      name: 'all CPU of the benchmark per publish (relays + PostgreSQL + load generator), 3 nodes',
      value: m((r) => r.pg3.benchUs),
      unit: 'µs/msg',
      baseline: m((r) => r.pg1.benchUs),
      baselineName: pg1Name,
      ratio: m((r) => r.pg3.benchUs / r.pg1.benchUs),
      target: 'context (what 2 cores must carry)',
    },
  ]
}

/** Publish→push at `rate`/s: `rs` rounds of {sqlite, pg1, pg3} latencyRun results. */
export function latencyRows(rs, rate) {
  const m = (f) => median(rs.map(f))
  const got = (c) => rs.map((r) => `${r[c].delivered}/${r[c].sent}`).join(', ')
  const busy = (c) => busyText(rs, c)
  const row = (name, c, base, baseName, p) => ({
    name,
    value: m((r) => r[c][p]),
    unit: 'ms',
    baseline: m((r) => r[base][p]),
    baselineName: baseName,
    ratio: m((r) => r[c][p] / r[base][p]),
    target: 'context',
  })
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
