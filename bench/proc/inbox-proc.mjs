/**
 * Inbox over HTTPS, server and load generator in separate processes (issue 12): the full
 * PROFILE §6 inbox (`serveHttps` + `createInboxHandler`, limits lifted) against a bare
 * node:https server doing `JSON.parse` + one raw node:crypto verify per request with a reused
 * KeyObject. `CONCURRENCY` requests in flight from `SENDERS` did:key senders, ~1 KB messages.
 * Per run: req/s at the publisher, and the server process's CPU µs per request (all threads).
 * `runs` rounds, the two servers in alternating order; figures are medians, the ratio the
 * median of the rounds' paired ratios.
 *
 * Standalone (after `npm run build`): `node bench/proc/inbox-proc.mjs [--runs N]`.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { didKeyFromPublicKey, generateKeyPair } from '@agentmsg/core'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { printTable } from '../lib.mjs'
import {
  alternatingRounds,
  loadAverage,
  pairedRow,
  scratch,
  spawnRole,
  threadCpuPer,
} from './harness.mjs'
import { agentFromSeed, newSeeds, signedItems, writeItems } from './workload.mjs'

export const CONCURRENCY = 32
export const SENDERS = 400
const WARMUP = 1_000
const MEASURED = 6_000
const INBOX_PATH = '/.well-known/agentmsg/inbox'

/**
 * One closed-loop run: a server process (`server` config, see server.mjs), `prepare(url)` if
 * given, then a publisher process POSTing to `path` with `concurrency` in flight: req/s and the
 * server's CPU µs per request over the measured part.
 */
export async function closedLoopRun({
  server: serverConfig,
  path,
  workload,
  ca,
  concurrency,
  warmup,
  measured,
  prepare,
}) {
  const server = await spawnRole('server', serverConfig, { profile: true })
  let publisher
  try {
    await prepare?.(server.info.url)
    publisher = await spawnRole('publisher', {
      url: server.info.url + path,
      ca,
      workload,
      maxSockets: concurrency,
    })
    await publisher.call('closed', { from: 0, to: warmup, concurrency })
    const cpu0 = await server.call('cpu')
    const threads0 = await server.call('threads')
    const s0 = await server.call('stats')
    const r = await publisher.call('closed', { from: warmup, to: warmup + measured, concurrency })
    const cpu1 = await server.call('cpu')
    const threads1 = await server.call('threads')
    const s1 = await server.call('stats')
    const bad = Object.entries(r.statuses).filter(([s]) => s !== '202')
    if (bad.length > 0)
      throw new Error(`${serverConfig.kind}: answers ${JSON.stringify(r.statuses)}`)
    const result = { rps: (r.n * 1000) / r.ms, cpuUs: (cpu1 - cpu0) / r.n, n: r.n }
    // CPU µs per request by thread (main, SQLite writer, libuv pool, V8 helpers).
    result.threads = threadCpuPer(threads0, threads1, r.n)
    // The relay's group commit: writes per COMMIT over the measured part.
    if (s1.commits !== undefined)
      result.perCommit = (s1.writes - s0.writes) / (s1.commits - s0.commits)
    return result
  } finally {
    await publisher?.stop()
    await server.stop()
  }
}

export async function benchProcInbox({ runs = 3, verbose = false } = {}) {
  const { cert, key, ca } = await createDevCertificate()
  const tls = { cert, key }
  const bob = didKeyFromPublicKey((await generateKeyPair()).publicKey)
  const senders = await Promise.all(newSeeds(SENDERS).map(agentFromSeed))
  const tmp = scratch()
  try {
    const workload = join(tmp.dir, 'inbox.ndjson')
    const items = await signedItems(senders, () => bob, WARMUP + MEASURED, 1024)
    writeItems(workload, items)
    const run = (kind) =>
      closedLoopRun({
        server: { kind, tls, agentId: bob, workload },
        path: INBOX_PATH,
        workload,
        ca,
        concurrency: CONCURRENCY,
        warmup: WARMUP,
        measured: MEASURED,
      })
    // The bare server first in even rounds, then in turn.
    const rounds = await alternatingRounds(
      runs,
      { bare: () => run('inbox-bare'), ours: () => run('inbox') },
      { verbose, label: 'inbox round' },
    )
    const bytes = Buffer.byteLength(items[0].body)
    const baselineName = 'https + JSON.parse + raw verify'
    return {
      rounds,
      rows: [
        pairedRow(rounds, 'ours', 'bare', 'rps', {
          name: `inbox over HTTPS, ${bytes} B, ${SENDERS} senders, ${CONCURRENCY} in flight (separate processes, median of ${runs})`,
          unit: 'req/s',
          baselineName,
          target: '≥ 1.0×',
        }),
        pairedRow(rounds, 'ours', 'bare', 'cpuUs', {
          name: 'inbox server CPU per request (all threads)',
          unit: 'µs/req',
          baselineName,
          target: '≤ 1.2×',
        }),
      ],
    }
  } finally {
    tmp.cleanup()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 3
  const { rows } = await benchProcInbox({ runs, verbose: !!process.env.BENCH_VERBOSE })
  printTable(`inbox over HTTPS, separate processes (load ${loadAverage()})`, rows)
}
