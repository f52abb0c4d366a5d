/**
 * Connection scale: one relay node (`serveRelay`, SQLite, its own process, scale-relay.mjs)
 * holding N authenticated idle streams (WebSocket, then SSE, each on a fresh relay) opened by
 * the lean load generator (scale-client.mjs), every stream its own did:key agent with an open
 * mailbox, spread over loopback source addresses so that PROFILE §9's 64 streams per client
 * address hold without being lifted. At each N, growing: the relay's RSS per idle stream
 * ((RSS at N − RSS with the probe stream only) / N, both after full GCs), its CPU while idle
 * over one SSE comment period, publish → push p50/p99 to one more stream (the probe) among the
 * N, and the time from a topic publish until the last of its 1,000 subscribers (the first
 * 1,000 streams) had it.
 *
 * The baseline, same run: a bare node:https + `ws` server holding as many idle streams (2,000 at
 * most), the floor a TLS stream costs in Node whatever serves it.
 *
 * The relay process needs N + ~100 open files: the bench raises its limit with `prlimit` (as
 * root with CAP_SYS_RESOURCE; children inherit it), else clamps N to what fits and says so.
 * Load generators hold 8,000 streams each. Standalone: `node bench/proc/scale.mjs [N,N,...]`;
 * BENCH_SCALE_SAMPLES (latency samples, 200), BENCH_SCALE_IDLE_MS (idle window, 15 s) and
 * BENCH_SCALE_MODES (ws,sse).
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { PROFILE } from '@agentmsg/core'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { printTable } from '../lib.mjs'
import { loadAverage, median, percentile, spawnRole } from './harness.mjs'

const TOPIC = 'bench.scale'
const FANOUT = 1_000
const SAMPLES = Number(process.env.BENCH_SCALE_SAMPLES ?? 200)
const IDLE_MS = Number(process.env.BENCH_SCALE_IDLE_MS ?? PROFILE.streamCommentMs)
const SETTLE_MS = 5_000
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Open-file limits (soft, hard) of this process. */
function fdLimits() {
  const m = /Max open files\s+(\d+)\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))
  return [Number(m?.[1]), Number(m?.[2])]
}

/**
 * Descriptors for this process and the children it forks later: `want`, raised with prlimit
 * when the hard limit is lower (root with CAP_SYS_RESOURCE); Node itself lifts the soft limit
 * to the hard one. Returns the limit the relay process will have.
 */
function raiseFdLimit(want) {
  if (fdLimits()[1] < want) {
    try {
      execFileSync('prlimit', ['--pid', String(process.pid), `--nofile=${want}:${want}`], {
        stdio: 'ignore',
      })
    } catch {
      // Reported by the caller, which clamps N.
    }
  }
  return fdLimits()[1]
}

/** Wait until the relay holds `n` streams (a WebSocket counts once its auth was checked). */
async function settle(relay, n) {
  for (let i = 0; i < 100; i++) {
    const open = await relay.call('streams')
    if (open >= n) return open
    await sleep(100)
  }
  return relay.call('streams')
}

/** Streams per load-generator process: well under any per-process open-file limit. */
const PER_CLIENT = 8_000

/** One mode on a fresh relay: a row set per N. */
async function scaleMode(mode, ns, tls) {
  const max = ns.at(-1)
  const probe = max
  const relay = await spawnRole('scale-relay', { tls: { cert: tls.cert, key: tls.key } })
  const config = { url: relay.info.url, ca: tls.ca }
  const clients = []
  for (let c = 0; c * PER_CLIENT < max; c++) clients.push(await spawnRole('scale-client', config))
  /** `cmd` for agents [from, to), each part on the client holding it (the probe: client 0). */
  const over = (cmd, from, to, args = {}) =>
    Promise.all(
      clients.map((client, c) => {
        const lo = Math.max(from, c * PER_CLIENT)
        const hi = Math.min(to, c === clients.length - 1 ? max : (c + 1) * PER_CLIENT)
        return lo < hi ? client.call(cmd, { from: lo, to: hi, ...args }) : undefined
      }),
    )
  const out = []
  try {
    await over('agents', 0, max)
    await clients[0].call('agents', { from: probe, to: probe + 1 })
    const fanout = Math.min(FANOUT, max)
    const subscribed = [
      ...(await over('subscribe', 0, fanout, { topic: TOPIC })),
      ...(await over('subscribe', fanout, max)),
      await clients[0].call('subscribe', { from: probe, to: probe + 1 }),
    ]
    if (subscribed.some((s) => s && Object.keys(s).some((k) => k !== '201'))) {
      throw new Error(`scale: subscribes answered ${JSON.stringify(subscribed)}`)
    }
    // The probe's stream, warmed: every code path a stream takes has run once.
    await clients[0].call('open', { from: probe, to: probe + 1, mode })
    await clients[0].call('latency', { target: probe, samples: 20 })
    // Each RSS after a pause: V8 gives back the heap a burst (subscribes, opens) grew only after
    // a few quiet seconds, which would otherwise count against (or for) the streams.
    await sleep(SETTLE_MS)
    const base = await relay.call('mem')
    let open = 0
    for (const n of ns) {
      const t0 = performance.now()
      await over('open', open, n, { mode })
      const openS = (performance.now() - t0) / 1000
      open = n
      const held = (await settle(relay, n + 1)) - 1
      await sleep(SETTLE_MS)
      const mem = await relay.call('mem')
      const cpu0 = await relay.call('cpu')
      await sleep(IDLE_MS)
      const cpuMsPerS = ((await relay.call('cpu')) - cpu0) / IDLE_MS
      const lat = await clients[0].call('latency', { target: probe, samples: SAMPLES })
      // Relay CPU per fan-out too: on a shared host the wall-clock time waits for other work.
      const cpuFan0 = await relay.call('cpu')
      const fan =
        n >= FANOUT
          ? await clients[0].call('fanout', { topic: TOPIC, rounds: 5, expect: FANOUT })
          : []
      const fanCpuMs = ((await relay.call('cpu')) - cpuFan0) / 1000 / Math.max(1, fan.length)
      const status = await Promise.all(clients.map((c) => c.call('status')))
      out.push({
        mode,
        n,
        held,
        openS,
        base,
        mem,
        cpuMsPerS,
        lat,
        fan,
        fanCpuMs,
        status,
        load: loadAverage(),
      })
    }
  } finally {
    await Promise.all(clients.map((c) => c.stop()))
    await relay.stop()
  }
  return out
}

/** KB of RSS per idle stream of the bare baseline (scale-relay.mjs `bare`) holding `n`. */
async function bareKb(mode, n, tls) {
  const server = await spawnRole('scale-relay', {
    tls: { cert: tls.cert, key: tls.key },
    bare: true,
  })
  const client = await spawnRole('scale-client', { url: server.info.url, ca: tls.ca })
  try {
    await client.call('agents', { from: 0, to: n + 50 })
    await client.call('open', { from: n, to: n + 50, mode })
    const base = await server.call('mem')
    await client.call('open', { from: 0, to: n, mode })
    await settle(server, n + 50)
    return ((await server.call('mem')).rss - base.rss) / n / 1024
  } finally {
    await client.stop()
    await server.stop()
  }
}

const verdict = (ok) => (ok ? 'met' : 'missed')

/** The section's rows from {@link scaleMode}'s figures. */
function rowsOf(r, asked, bare) {
  const at = `${r.mode} ${r.n.toLocaleString('en-US')}${asked === r.n ? '' : ` (of ${asked}: fd limit)`}`
  const kb = (r.mem.rss - r.base.rss) / r.n / 1024
  const p50 = percentile(r.lat, 50)
  const p99 = percentile(r.lat, 99)
  const fan = median(r.fan)
  const rows = [
    {
      name: `${at}: streams held`,
      value: r.held,
      unit: 'streams',
      target: `= ${asked}`,
      verdict: verdict(r.held === asked),
    },
    { name: `${at}: time to open the new ones`, value: r.openS, unit: 's' },
    {
      name: `${at}: RSS per idle stream`,
      value: kb,
      unit: 'KB',
      baseline: bare.kb,
      baselineName: `bare https+ws, ${bare.n}`,
      ratio: kb / bare.kb,
      target: '≤ 20 KB',
      // Negative at small N: V8 gave back more heap meanwhile than the streams took.
      verdict: kb > 0 ? verdict(kb <= 20) : 'not measurable',
    },
    {
      name: `${at}: heap per idle stream`,
      value: (r.mem.heapUsed - r.base.heapUsed) / r.n / 1024,
      unit: 'KB',
    },
    { name: `${at}: relay CPU while idle`, value: r.cpuMsPerS, unit: 'ms/s' },
    { name: `${at}: publish→push p50`, value: p50, unit: 'ms' },
    {
      name: `${at}: publish→push p99`,
      value: p99,
      unit: 'ms',
      target: '≤ 50 ms',
      verdict: verdict(p99 <= 50),
    },
  ]
  if (r.fan.length > 0) {
    rows.push({
      name: `${at}: topic to 1,000, median of ${r.fan.length}`,
      value: fan,
      unit: 'ms',
      target: '≤ 250 ms',
      verdict: verdict(fan <= 250),
    })
    rows.push({ name: `${at}: relay CPU per topic fan-out`, value: r.fanCpuMs, unit: 'ms' })
  }
  return rows
}

/** Descriptors the relay process uses besides its streams (stdio, IPC, SQLite, listener, probe). */
const RESERVE = 100
/** Streams of the bare baseline: the floor a TLS stream costs in Node, whatever serves it. */
const BARE_N = 2_000

/**
 * The scale section at each N of `ns`, WebSocket then SSE. An N the relay process's open-file
 * limit cannot hold is clamped to it, and said so in the rows and on stderr.
 */
export async function benchScale({ ns = [1_000, 5_000, 20_000], verbose = false } = {}) {
  const limit = raiseFdLimit(Math.max(...ns) + 4_096)
  const fit = limit - RESERVE
  if (Math.max(...ns) > fit) {
    console.error(
      `scale: the open-file limit is ${limit} per process and cannot be raised here (prlimit ` +
        `needs root with CAP_SYS_RESOURCE): N is clamped to ${fit}; for more, run ` +
        `\`ulimit -n ${Math.max(...ns) + 4_096}\` as root before the bench.`,
    )
  }
  const asked = [...ns].sort((a, b) => a - b)
  ns = [...new Set(asked.map((n) => Math.min(n, fit)))]
  const { cert, key, ca } = await createDevCertificate()
  const tls = { cert, key, ca }
  const rows = []
  const loads = []
  for (const mode of (process.env.BENCH_SCALE_MODES ?? 'ws,sse').split(',')) {
    const bareN = Math.min(BARE_N, ns.at(-1))
    const bare = { n: bareN, kb: await bareKb(mode, bareN, tls) }
    for (const r of await scaleMode(mode, ns, tls)) {
      if (verbose)
        console.log(JSON.stringify({ ...r, lat: [50, 99, 100].map((p) => percentile(r.lat, p)) }))
      loads.push(r.load)
      rows.push(
        ...rowsOf(
          r,
          asked.find((n) => Math.min(n, fit) === r.n),
          bare,
        ),
      )
    }
  }
  return { rows, loads }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const ns = (process.argv[2] ?? process.env.BENCH_SCALE_N ?? '1000,5000,20000')
    .split(',')
    .map(Number)
  const { rows, loads } = await benchScale({ ns, verbose: true })
  printTable(`connection scale, one relay node (load ${loads.join(' / ')})`, rows)
}
