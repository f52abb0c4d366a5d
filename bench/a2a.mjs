/**
 * A2A over agentmsg against a2a-js's own JSON-RPC over HTTPS, same executor, same machine, same
 * run (`npm run bench -- a2a`). Both sides are stock a2a-js: a `ClientFactory` calling
 * `sendMessage`, a `DefaultRequestHandler` around one executor that completes every task at once
 * (proc/a2a-agent.mjs). Every part is its own process:
 * - baseline: the Express `jsonRpcHandler` on node:https (dev certificate), the client's
 *   default JSON-RPC transport over a keep-alive fetch that trusts the dev CA;
 * - ours: `serveA2A` on a relay-only agentmsg agent, a relay (`serveRelay`, SQLite, rate limits
 *   lifted: one loopback address and two senders would measure the limiter), and a relay-only
 *   client agent with `agentmsgTransportFactory`. Each call is a signed message sealed to the
 *   agent, stored durably by the relay and streamed to it (SSE), verified and opened there; the
 *   answer the same way back. The agents keep their state in memory (the SDK's default; a2a-js
 *   keeps its tasks in memory too); `BENCH_A2A_FILES=1` adds a case with both on storage-fs.
 * Per case: calls/s with `CONCURRENCY` in flight, then p50/p99 one call at a time, and the CPU
 * per call of all its processes. `runs` rounds, the cases in alternating order; figures are
 * medians, ratios the medians of the rounds' paired ratios.
 *
 * Standalone (after `npm run build`): `node bench/a2a.mjs [--runs N]`;
 * `BENCH_CPU_PROF=DIR` profiles the A2A client and agent processes.
 */
import { pathToFileURL } from 'node:url'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { printTable } from './lib.mjs'
import { alternatingRounds, loadAverage, pairedRow, spawnRole } from './proc/harness.mjs'

export const CONCURRENCY = 16
const RATE_MS = 5_000
const WARMUP_MS = 1_500
const LATENCY_MS = 5_000

/** One case (`kind` http or agentmsg, the agents on `storage`): started, measured, stopped. */
async function a2aCase({ kind, storage }, tls, ca) {
  const roles = []
  try {
    let relay
    if (kind === 'agentmsg') {
      relay = await spawnRole('server', { kind: 'relay', tls })
      roles.push(relay)
    }
    const config = { kind, storage, tls, ca, relay: relay?.info.url }
    const client = await spawnRole('a2a-client', config, { profile: true })
    roles.push(client)
    const contacts = [client.info.id]
    const agent = await spawnRole('a2a-agent', { ...config, contacts }, { profile: true })
    roles.push(agent)
    await client.call('connect', { card: agent.info.card })
    await client.call('rate', { concurrency: CONCURRENCY, ms: WARMUP_MS })
    const cpu = () => Promise.all(roles.map((r) => r.call('cpu')))
    const cpu0 = await cpu()
    const rate = await client.call('rate', { concurrency: CONCURRENCY, ms: RATE_MS })
    const cpu1 = await cpu()
    const lat = await client.call('latency', { ms: LATENCY_MS })
    // CPU µs per call by process, in start order: [relay,] client, agent.
    const perCall = cpu1.map((c, i) => Math.round((c - cpu0[i]) / rate.n))
    return {
      rps: rate.rps,
      calls: rate.n,
      cpuUs: perCall.reduce((a, b) => a + b, 0),
      cpuByProcess: perCall.join(' + '),
      p50: lat.p50,
      p99: lat.p99,
      sequential: lat.n,
    }
  } finally {
    for (const role of roles.reverse()) await role.stop()
  }
}

/**
 * `runs` rounds of the baseline and ours (agents on memory, the SDK's default); with `files`
 * (`BENCH_A2A_FILES=1`) also ours with both agents on storage-fs (durable outbox and replay
 * records, fsync per write).
 */
export async function benchA2A({ runs = 3, verbose = false, files = false } = {}) {
  const { cert, key, ca } = await createDevCertificate()
  const tls = { cert, key }
  const cases = {
    http: () => a2aCase({ kind: 'http' }, tls, ca),
    agentmsg: () => a2aCase({ kind: 'agentmsg', storage: 'memory' }, tls, ca),
  }
  if (files) cases.files = () => a2aCase({ kind: 'agentmsg', storage: 'fs' }, tls, ca)
  const rounds = await alternatingRounds(runs, cases, { verbose, label: 'a2a round' })
  const baselineName = 'a2a-js JSON-RPC over HTTPS'
  const row = (c, key, name, unit) =>
    pairedRow(rounds, c, 'http', key, { name, unit, baselineName, target: 'context' })
  const what = `A2A sendMessage over agentmsg (relay, sealed, agents on memory)`
  const rows = [
    row('agentmsg', 'rps', `${what}, ${CONCURRENCY} in flight (median of ${runs})`, 'calls/s'),
    row('agentmsg', 'p50', `${what}, p50 one call at a time`, 'ms'),
    row('agentmsg', 'p99', `${what}, p99 one call at a time`, 'ms'),
    row('agentmsg', 'cpuUs', `${what}, CPU per call, all processes (all threads)`, 'µs'),
  ]
  if (files) {
    const onFiles = 'A2A sendMessage over agentmsg, both agents on storage-fs'
    rows.push(
      row('files', 'rps', `${onFiles}, ${CONCURRENCY} in flight`, 'calls/s'),
      row('files', 'p50', `${onFiles}, p50 one call at a time`, 'ms'),
      row('files', 'cpuUs', `${onFiles}, CPU per call, all processes`, 'µs'),
    )
  }
  return { rounds, rows }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const i = process.argv.indexOf('--runs')
  const { rows, rounds } = await benchA2A({
    runs: Number(i < 0 ? 3 : process.argv[i + 1]) || 3,
    verbose: !!process.env.BENCH_VERBOSE,
    files: !!process.env.BENCH_A2A_FILES,
  })
  if (process.env.BENCH_VERBOSE) console.log(JSON.stringify(rounds, null, 2))
  printTable(`A2A over agentmsg vs JSON-RPC over HTTPS (load ${loadAverage()})`, rows)
}
