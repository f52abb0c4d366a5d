/**
 * Relay load test (issue 12), bounded and on loopback only: the `agentmsg relay` CLI as an
 * operator runs it (`--dev-tls --rate-limit unlimited --sender-rate-limit unlimited`), a
 * publisher process pacing ~1 KB signed direct messages at `--rate` msg/s for `--duration` s,
 * and two subscriber processes: `--ws` agents reading over WebSocket and `--sse` agents over
 * SSE, each through the relay client into an agent's receive pipeline (verify, replay). The
 * messages go round-robin to the agents. Reported per stream kind: delivered / sent,
 * duplicated (deliveries past the first), lost, p50 / p99 publish→receive, and the relay
 * process's CPU per message; any answer but 202 is counted.
 *
 *   node bench/proc/load-test.mjs [--duration 60] [--rate 1000] [--ws 2] [--sse 2] [--json FILE]
 *
 * Exit code 1 when a message was lost or a publish not accepted.
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { loadAverage, percentile, scratch, spawnRole } from './harness.mjs'
import { agentFromSeed, newSeeds, signedItems, writeItems } from './workload.mjs'

const CLI = fileURLToPath(new URL('../../packages/cli/bin/agentmsg.js', import.meta.url))

/** The CLI relay; resolves with its URL, the dev CA it trusts, its pid and a stop(). */
async function startCliRelay(dir) {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'relay',
      ...['--data', join(dir, 'relay'), '--port', '0', '--dev-tls'],
      ...['--rate-limit', 'unlimited', '--sender-rate-limit', 'unlimited'],
    ],
    {
      env: { ...process.env, AGENTMSG_HOME: join(dir, 'home') },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  )
  let log = ''
  const started = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`relay did not start:\n${log}`)), 30_000)
    child.stderr.on('data', (chunk) => {
      log += chunk
      const url = /listening on (https:\/\/\S+)/.exec(log)?.[1]
      const ca = /development CA: (\S+)/.exec(log)?.[1]
      if (url && ca) {
        clearTimeout(timer)
        resolve({ url, ca: readFileSync(ca, 'utf8') })
      }
    })
    child.once('exit', (code) => reject(new Error(`relay exited (${code}):\n${log}`)))
  })
  return {
    ...started,
    pid: child.pid,
    log: () => log,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve)
        child.kill('SIGTERM')
      }),
  }
}

/** CPU ms of a process so far (Linux /proc: utime + stime, 10 ms ticks). */
function processCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

function summarize(kind, ids, got) {
  const arrivedAt = new Map(got.ids.map((id, i) => [id, got.arrivalNs[i]]))
  const lat = []
  for (const [id, sentNs] of ids) {
    const at = arrivedAt.get(id)
    if (at !== undefined) lat.push((at - sentNs) / 1e6)
  }
  lat.sort((a, b) => a - b)
  return {
    kind,
    sent: ids.length,
    delivered: lat.length,
    lost: ids.length - lat.length,
    duplicated: got.deliveries - got.ids.length,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    max: lat[lat.length - 1],
    errors: got.errorCount,
    acks: got.acks,
  }
}

export async function loadTest({ duration = 60, rate = 1000, ws = 2, sse = 2 } = {}) {
  const tmp = scratch('agentmsg-load-')
  const stops = []
  try {
    const wsSeeds = newSeeds(ws)
    const sseSeeds = newSeeds(sse)
    const seeds = [...wsSeeds, ...sseSeeds]
    const recipients = await Promise.all(seeds.map(agentFromSeed))
    const senders = await Promise.all(newSeeds(16).map(agentFromSeed))
    const count = Math.round(duration * rate)
    const workload = join(tmp.dir, 'load.ndjson')
    const items = await signedItems(senders, (i) => recipients[i % seeds.length].id, count)
    writeItems(workload, items)
    const relay = await startCliRelay(tmp.dir)
    stops.push(() => relay.stop())
    const subs = {}
    for (const [kind, list] of [
      ['ws', wsSeeds],
      ['sse', sseSeeds],
    ]) {
      if (list.length === 0) continue
      const sub = await spawnRole('subscriber', { relayUrl: relay.url, ca: relay.ca })
      stops.unshift(() => sub.stop())
      await sub.call('subscribe', { seeds: list })
      await sub.call('stream', { seeds: list, mode: kind })
      subs[kind] = sub
    }
    const pub = await spawnRole('publisher', {
      url: `${relay.url}/relay/publish`,
      ca: relay.ca,
      workload,
      maxSockets: 128,
    })
    stops.unshift(() => pub.stop())
    const load = loadAverage()
    const cpu0 = processCpuMs(relay.pid)
    const t0 = performance.now()
    const sent = await pub.call('paced', { from: 0, to: count, rate })
    const publishS = (performance.now() - t0) / 1000
    // Each kind's share of the messages, by recipient.
    const kindOf = (i) => (i % seeds.length < wsSeeds.length ? 'ws' : 'sse')
    const perKind = { ws: [], sse: [] }
    sent.ids.forEach((id, i) => perKind[kindOf(i)].push([id, sent.sentNs[i]]))
    const rows = []
    for (const [kind, sub] of Object.entries(subs)) {
      await sub.call('waitFor', { n: perKind[kind].length, timeoutMs: 60_000 })
      rows.push(summarize(kind, perKind[kind], await sub.call('collect')))
    }
    const cpuMs = processCpuMs(relay.pid) - cpu0
    const notAccepted = Object.entries(sent.statuses)
      .filter(([s]) => s !== '202')
      .reduce((n, [, c]) => n + c, 0)
    return {
      duration,
      rate,
      achievedRate: count / publishS,
      load,
      statuses: sent.statuses,
      notAccepted,
      relayCpuUsPerMsg: (cpuMs * 1000) / count,
      rows,
      ok: notAccepted === 0 && rows.every((r) => r.lost === 0),
    }
  } finally {
    for (const stop of stops) await stop().catch(() => undefined)
    tmp.cleanup()
  }
}

export function printLoadTest(r) {
  console.log(
    `\n## relay load test: ${r.rate} msg/s for ${r.duration} s (achieved ${r.achievedRate.toFixed(0)}/s), CLI relay, load ${r.load}`,
  )
  console.log('| stream | delivered / sent | duplicated | lost | p50 | p99 | max | HTTP acks |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const row of r.rows) {
    const acks =
      row.kind === 'ws'
        ? 'ack frames'
        : `${row.acks.batches} POST /relay/ack (${row.acks.entries} entries), ${row.acks.deletes} DELETE`
    console.log(
      `| ${row.kind} | ${row.delivered} / ${row.sent} | ${row.duplicated} | ${row.lost} | ${row.p50.toFixed(2)} ms | ${row.p99.toFixed(2)} ms | ${row.max.toFixed(0)} ms | ${acks} |`,
    )
  }
  console.log(
    `publishes answered: ${JSON.stringify(r.statuses)}; relay CPU ${r.relayCpuUsPerMsg.toFixed(0)} µs/msg; ${r.ok ? 'no message lost' : 'FAILED: lost messages or refused publishes'}`,
  )
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(name)
    return i < 0 ? fallback : Number(process.argv[i + 1])
  }
  const r = await loadTest({
    duration: arg('--duration', 60),
    rate: arg('--rate', 1000),
    ws: arg('--ws', 2),
    sse: arg('--sse', 2),
  })
  printLoadTest(r)
  const i = process.argv.indexOf('--json')
  if (i >= 0) writeFileSync(process.argv[i + 1], JSON.stringify(r, null, 2))
  process.exitCode = r.ok ? 0 : 1
}
