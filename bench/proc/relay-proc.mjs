/**
 * The relay, server / publisher / subscribers in separate processes (issue 12):
 *
 * 1. Durable publish, `PUBLISH_CONCURRENCY` in flight: `POST /relay/publish` of ~1 KB direct
 *    messages to `PUBLISH_CONCURRENCY` open mailboxes, msg/s and the server process's CPU
 *    µs/msg, against a bare server in the same layout: node:https + `JSON.parse` + one raw
 *    verify + an INSERT group-committed per event-loop turn into SQLite (WAL, synchronous=FULL)
 *    (server.mjs `relay-bare`).
 * 2. Publish→push latency (latency-proc.mjs): paced publishes, one subscriber through the
 *    relay client's stream into an agent's receive pipeline, against node:https POST → `ws`
 *    push to a raw `ws` client.
 *
 * Limits are lifted (the load generator is one address, a few senders). Each row runs `runs`
 * rounds in alternating order; figures are medians, ratios the medians of paired ratios.
 *
 * Standalone (after `npm run build`): `node bench/proc/relay-proc.mjs [--runs N]`.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { printTable } from '../lib.mjs'
import { alternatingRounds, loadAverage, pairedRow, scratch, spawnRole } from './harness.mjs'
import { closedLoopRun } from './inbox-proc.mjs'
import { latencyRows } from './latency-proc.mjs'
import { agentFromSeed, newSeeds, signedItems, writeItems } from './workload.mjs'

export const PUBLISH_CONCURRENCY = 64
const SENDERS = 32
const WARMUP = 1_000
const MEASURED = 6_000

/** One durable-publish run against `server` (a server.mjs config), after `prepare(url)` if given. */
function publishRun({ server, ca, workload, prepare }) {
  return closedLoopRun({
    server,
    path: '/relay/publish',
    workload,
    ca,
    concurrency: PUBLISH_CONCURRENCY,
    warmup: WARMUP,
    measured: MEASURED,
    prepare,
  })
}

/** Against the relay, its mailboxes opened by a subscriber process first. */
function relayPublishRun({ tls, ca, workload, recipients }) {
  return publishRun({
    server: { kind: 'relay', tls },
    ca,
    workload,
    prepare: async (url) => {
      const sub = await spawnRole('subscriber', { relayUrl: url, ca })
      try {
        await sub.call('subscribe', { seeds: recipients })
      } finally {
        await sub.stop()
      }
    },
  })
}

export async function benchProcRelayPublish({ tls, ca, runs = 3, verbose = false }) {
  const recipients = newSeeds(PUBLISH_CONCURRENCY)
  const ids = (await Promise.all(recipients.map(agentFromSeed))).map((a) => a.id)
  const senders = await Promise.all(newSeeds(SENDERS).map(agentFromSeed))
  const tmp = scratch()
  try {
    const workload = join(tmp.dir, 'publish.ndjson')
    const items = await signedItems(senders, (i) => ids[i % ids.length], WARMUP + MEASURED)
    writeItems(workload, items)
    // The bare server first in even rounds, then in turn.
    const rounds = await alternatingRounds(
      runs,
      {
        bare: () => publishRun({ server: { kind: 'relay-bare', tls, workload }, ca, workload }),
        ours: () => relayPublishRun({ tls, ca, workload, recipients }),
      },
      { verbose, label: 'publish round' },
    )
    const bytes = Buffer.byteLength(items[0].body)
    const baselineName = 'https + parse + raw verify + group-committed SQLite insert'
    return {
      rounds,
      rows: [
        pairedRow(rounds, 'ours', 'bare', 'rps', {
          name: `relay durable publish, ${bytes} B direct, ${PUBLISH_CONCURRENCY} in flight (separate processes, median of ${runs})`,
          unit: 'msg/s',
          baselineName,
          target: '≥ 0.9×',
        }),
        pairedRow(rounds, 'ours', 'bare', 'cpuUs', {
          name: 'relay server CPU per publish (all threads)',
          unit: 'µs/msg',
          baselineName,
          target: '≤ 1.3×',
        }),
      ],
    }
  } finally {
    tmp.cleanup()
  }
}

/** Every relay row: durable publish, then the latency rows. */
export async function benchProcRelay({ runs = 3, verbose = false, only } = {}) {
  const { cert, key, ca } = await createDevCertificate()
  const tls = { cert, key }
  const out = { rows: [], rounds: {} }
  if (!only || only === 'publish') {
    const p = await benchProcRelayPublish({ tls, ca, runs, verbose })
    out.rows.push(...p.rows)
    out.rounds.publish = p.rounds
  }
  if (!only || only === 'latency') {
    const l = await latencyRows({ tls, ca, runs, verbose })
    out.rows.push(...l.rows)
    out.rounds.latency = l.rounds
  }
  return out
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (name) => {
    const i = process.argv.indexOf(name)
    return i < 0 ? undefined : process.argv[i + 1]
  }
  const { rows } = await benchProcRelay({
    runs: Number(arg('--runs')) || 3,
    verbose: !!process.env.BENCH_VERBOSE,
    only: arg('--only'),
  })
  printTable(`relay, separate processes (load ${loadAverage()})`, rows)
}
