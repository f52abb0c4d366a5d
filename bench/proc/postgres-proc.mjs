/**
 * The relay on PostgreSQL beside the relay on SQLite, 1 and 3 nodes (issue 13), every relay,
 * publisher and subscriber its own process (harness.mjs), all in the same run:
 *
 * 1. Durable publish, `PUBLISH_CONCURRENCY` in flight (relay-proc.mjs's workload): SQLite, one
 *    relay process | PostgreSQL, one relay process | PostgreSQL, three relay processes on one
 *    schema, the load generator (one process, as in relay-proc) taking the nodes in turn
 *    request by request. msg/s, the relay processes' CPU µs/msg (all nodes summed), the
 *    PostgreSQL server's CPU µs/msg, and how busy the machine was (and with what: other work
 *    shares this host).
 * 2. Publish→push latency at each of `RATES`/s, a WebSocket subscriber through the relay client
 *    into an agent's receive pipeline (as latency-proc.mjs): SQLite 1 node | PostgreSQL 1 node
 *    | PostgreSQL 3 nodes, the subscriber streaming from node 0 and every publish going to
 *    nodes 1 and 2 in turn, so each message crosses nodes (the store's LISTEN/NOTIFY). Two
 *    rates: on a 2-core machine 300/s already keeps every core busy with 3 nodes, and the
 *    figure is then mostly queueing for CPU; 100/s shows the path itself.
 *
 * Each PostgreSQL run gets a fresh schema (`agentmsg_bench_<hex>`), dropped after it. Rounds
 * alternate the order of the cases; figures are medians of `runs`, ratios medians of the
 * rounds' paired ratios.
 *
 * Standalone (after `npm run build`): `node bench/proc/postgres-proc.mjs [--runs N]`.
 * PostgreSQL: `AGENTMSG_TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/test).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { printTable } from '../lib.mjs'
import { cpuBetween, cpuSnapshot, POSTGRES_URL, postgresQuery, startCluster } from './cluster.mjs'
import {
  alternatingRounds,
  loadAverage,
  percentile,
  pushLatencies,
  scratch,
  spawnRole,
} from './harness.mjs'
import { latencyRows, publishRows } from './postgres-rows.mjs'
import { agentFromSeed, newSeeds, signedItems, writeItems } from './workload.mjs'

const PUBLISH_CONCURRENCY = 64
const PUBLISH_SENDERS = 32
const WARMUP = 1_000
const MEASURED = 5_000
/** A slow case stops here and reports the rate of what it sent. */
const MEASURED_MAX_MS = 15_000
/** Paced publishes per second of the latency rows (`BENCH_PG_RATES=100,300`). */
const RATES = (process.env.BENCH_PG_RATES ?? '100,300').split(',').map(Number)
const LATENCY_SENDERS = 8
const LATENCY_WARMUP_S = 0.5
const LATENCY_MEASURED_S = 3

const CASES = {
  sqlite: { store: 'sqlite', nodes: 1 },
  pg1: { store: 'postgres', nodes: 1 },
  pg3: { store: 'postgres', nodes: 3 },
}

function only202(statuses, what, { lost = false } = {}) {
  // `lost`: requests that got no answer (status 0: a socket error on a host this busy) are
  // counted, not fatal; any other answer is.
  const bad = Object.keys(statuses).filter((s) => s !== '202' && !(lost && s === '0'))
  if (bad.length > 0) throw new Error(`${what}: answers ${JSON.stringify(statuses)}`)
  return statuses['0'] ?? 0
}

/** One durable-publish run on a fresh cluster. */
async function publishRun({ store, nodes }, { tls, ca, workload, recipients }) {
  const cluster = await startCluster({ store, nodes, tls })
  let pub
  let result
  try {
    // The mailboxes are the store's: opened on one node, they are open on all of them.
    const sub = await spawnRole('subscriber', { relayUrl: cluster.urls[0], ca })
    try {
      await sub.call('subscribe', { seeds: recipients })
    } finally {
      await sub.stop()
    }
    pub = await spawnRole('publisher', {
      urls: cluster.urls.map((u) => `${u}/relay/publish`),
      ca,
      workload,
      maxSockets: PUBLISH_CONCURRENCY,
    })
    const concurrency = PUBLISH_CONCURRENCY
    const warm = await pub.call('closed', { from: 0, to: WARMUP, concurrency })
    const lostWarm = only202(warm.statuses, store, { lost: true })
    const a = await cpuSnapshot(cluster, [pub.pid])
    const r = await pub.call('closed', {
      from: WARMUP,
      to: WARMUP + MEASURED,
      concurrency,
      maxMs: MEASURED_MAX_MS,
    })
    const b = await cpuSnapshot(cluster, [pub.pid])
    const lost = lostWarm + only202(r.statuses, `${store} ×${nodes}`, { lost: true })
    result = { rps: (r.n * 1000) / r.ms, n: r.n, lost, ...cpuBetween(a, b, r.n) }
  } finally {
    await pub?.stop()
    const { transactions } = await cluster.stop()
    // Publishes per write transaction over the whole run (warm-up included).
    if (result) result.perCommit = (WARMUP + result.n) / transactions
  }
  return result
}

/**
 * One paced latency run: the subscriber streams (WebSocket) from node 0; publishes go to the
 * other nodes in turn, or to node 0 when it is the only one.
 */
async function latencyRun({ store, nodes }, { rate, tls, ca, workload, seed }) {
  const warmup = Math.round(LATENCY_WARMUP_S * rate)
  const count = warmup + Math.round(LATENCY_MEASURED_S * rate)
  const cluster = await startCluster({ store, nodes, tls })
  const stops = [() => cluster.stop()]
  try {
    const sub = await spawnRole('subscriber', { relayUrl: cluster.urls[0], ca })
    stops.unshift(() => sub.stop())
    await sub.call('subscribe', { seeds: [seed] })
    await sub.call('stream', { seeds: [seed], mode: 'ws' })
    const targets = nodes > 1 ? cluster.urls.slice(1) : cluster.urls
    const pub = await spawnRole('publisher', {
      urls: targets.map((u) => `${u}/relay/publish`),
      ca,
      workload,
      maxSockets: 64,
    })
    stops.unshift(() => pub.stop())
    // A ping (item 0) shows the stream is live before the clock starts.
    await pub.call('paced', { from: 0, to: 1, rate })
    if ((await sub.call('waitFor', { n: 1, timeoutMs: 15_000 })) < 1) {
      throw new Error(`${store} ×${nodes}: the ping never arrived`)
    }
    await sub.call('collect')
    const a = await cpuSnapshot(cluster, [pub.pid, sub.pid])
    const sent = await pub.call('paced', { from: 1, to: 1 + count, rate })
    await sub.call('waitFor', { n: count, timeoutMs: 30_000 })
    const b = await cpuSnapshot(cluster, [pub.pid, sub.pid])
    only202(sent.statuses, `${store} ×${nodes}`)
    const got = await sub.call('collect')
    if (got.errorCount > 0) console.log(`${store} ×${nodes} subscriber errors:`, got.errors)
    const { lat, arrivedAt } = pushLatencies(sent, got, warmup)
    return {
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      sent: count,
      delivered: sent.ids.filter((id) => arrivedAt.has(id)).length,
      duplicates: got.deliveries - got.ids.length,
      ...cpuBetween(a, b, count),
    }
  } finally {
    for (const stop of stops) await stop()
  }
}

/** `runs` rounds of `run(case)` over every case, the order reversed every other round. */
function rounds(runs, run, verbose, label) {
  const cases = Object.fromEntries(Object.entries(CASES).map(([name, c]) => [name, () => run(c)]))
  return alternatingRounds(runs, cases, { verbose, label })
}

/** Both tables' rows, and the rounds behind them. */
export async function benchProcPostgres({ runs = 2, verbose = false } = {}) {
  let backend
  try {
    backend = (await postgresQuery('SELECT pg_backend_pid() AS pid')).rows[0].pid
  } catch (error) {
    throw new Error(`PostgreSQL at ${POSTGRES_URL} did not answer: ${error.message}`)
  }
  if (!existsSync(`/proc/${backend}`)) {
    console.log('(PostgreSQL runs elsewhere: its CPU is not reported)')
  }
  const { cert, key, ca } = await createDevCertificate()
  const tls = { cert, key }
  const tmp = scratch()
  try {
    const recipients = newSeeds(PUBLISH_CONCURRENCY)
    const ids = (await Promise.all(recipients.map(agentFromSeed))).map((a) => a.id)
    const senders = await Promise.all(newSeeds(PUBLISH_SENDERS).map(agentFromSeed))
    const publishFile = join(tmp.dir, 'publish.ndjson')
    const items = await signedItems(senders, (i) => ids[i % ids.length], WARMUP + MEASURED)
    writeItems(publishFile, items)

    const seed = newSeeds(1)[0]
    const subscriber = await agentFromSeed(seed)
    const latencySenders = await Promise.all(newSeeds(LATENCY_SENDERS).map(agentFromSeed))
    const latencyFile = join(tmp.dir, 'latency.ndjson')
    const most = 1 + Math.round((LATENCY_WARMUP_S + LATENCY_MEASURED_S) * Math.max(...RATES))
    writeItems(latencyFile, await signedItems(latencySenders, () => subscriber.id, most))

    const publish = await rounds(
      runs,
      (c) => publishRun(c, { tls, ca, workload: publishFile, recipients }),
      verbose,
      'publish round',
    )
    const latency = {}
    for (const rate of RATES) {
      latency[rate] = await rounds(
        runs,
        (c) => latencyRun(c, { rate, tls, ca, workload: latencyFile, seed }),
        verbose,
        `latency round (${rate}/s)`,
      )
    }
    return {
      publishRows: publishRows(publish, {
        bytes: Buffer.byteLength(items[0].body),
        concurrency: PUBLISH_CONCURRENCY,
      }),
      latencyRows: RATES.flatMap((rate) => latencyRows(latency[rate], rate)),
      rounds: { publish, latency },
    }
  } finally {
    tmp.cleanup()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const i = process.argv.indexOf('--runs')
  const r = await benchProcPostgres({
    runs: Number(i < 0 ? undefined : process.argv[i + 1]) || 2,
    verbose: !!process.env.BENCH_VERBOSE,
  })
  printTable(`relay on PostgreSQL, durable publish (load ${loadAverage()})`, r.publishRows)
  printTable('relay on PostgreSQL, publish→push', r.latencyRows)
}
