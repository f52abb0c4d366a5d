/**
 * Publish→push latency, server / publisher / subscriber in separate processes (issue 12).
 * Paced publishes of ~1 KB signed direct messages over keep-alive https (publisher.mjs); one
 * subscriber reads through the relay client's stream (`ws` or `sse`) into an agent's receive
 * pipeline (subscriber.mjs). Latency = the receiver's `onMessage` − the publisher's send, both
 * on CLOCK_MONOTONIC. Baseline: node:https POST → `ws` push of the body to a raw `ws` client
 * that JSON-parses it (relay-common.mjs `startBare`), same certificate, bytes and pacing.
 */
import { join } from 'node:path'
import {
  alternatingRounds,
  median,
  pairedRow,
  percentile,
  pushLatencies,
  scratch,
  spawnRole,
  threadCpuPer,
} from './harness.mjs'
import { agentFromSeed, newSeeds, signedItems, writeItems } from './workload.mjs'

const SENDERS = 8
/** Seconds measured per run, after the warm-up (the first `WARMUP_S` seconds are not counted). */
const MEASURED_S = 4
const WARMUP_S = 0.5

/**
 * One paced run: `server` config; `mode` 'ws' | 'sse' (relay client), 'raw' (bare ws) or
 * 'none' (publishes only); `verify: false` skips the subscriber's receive pipeline; `seed` the
 * subscriber's. → `{p50, p99, sent, delivered, duplicates, statuses, cpuUs, threads}`.
 */
export async function latencyRun({
  server: serverConfig,
  mode,
  rate,
  seed,
  workload,
  ca,
  verify = true,
}) {
  const warmup = Math.round(WARMUP_S * rate)
  const count = warmup + Math.round(MEASURED_S * rate)
  const server = await spawnRole('server', serverConfig, { profile: true })
  const stops = [() => server.stop()]
  try {
    const url = server.info.url
    const sub = await spawnRole('subscriber', { relayUrl: url, ca })
    stops.unshift(() => sub.stop())
    if (mode === 'raw') await sub.call('rawws', { url })
    else {
      await sub.call('subscribe', { seeds: [seed] })
      // 'none': the mailbox is open but nobody reads it (the publish half alone).
      if (mode !== 'none') await sub.call('stream', { seeds: [seed], mode, verify })
    }
    const pub = await spawnRole('publisher', {
      url: `${url}/relay/publish`,
      ca,
      workload,
      maxSockets: 64,
    })
    stops.unshift(() => pub.stop())
    // A ping (item 0) shows the stream is live before the clock starts.
    await pub.call('paced', { from: 0, to: 1, rate })
    const live = mode === 'none' ? 1 : await sub.call('waitFor', { n: 1, timeoutMs: 15_000 })
    if (live < 1) {
      throw new Error(`${serverConfig.kind} ${mode}: the ping never arrived`)
    }
    await sub.call('collect')
    const cpu0 = await server.call('cpu')
    const threads0 = await server.call('threads')
    const sent = await pub.call('paced', { from: 1, to: 1 + count, rate })
    if (mode !== 'none') await sub.call('waitFor', { n: count, timeoutMs: 30_000 })
    const cpu1 = await server.call('cpu')
    const threads1 = await server.call('threads')
    // CPU µs per message by thread (main, the SQLite writer, libuv pool…), to see where it goes.
    const threads = threadCpuPer(threads0, threads1, count)
    const got = await sub.call('collect')
    const { lat, arrivedAt } = pushLatencies(sent, got, warmup)
    const delivered = sent.ids.filter((id) => arrivedAt.has(id)).length
    if (got.errorCount > 0) console.log(`${serverConfig.kind} ${mode} errors:`, got.errors)
    return {
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      sent: count,
      delivered,
      duplicates: got.deliveries - got.ids.length,
      statuses: sent.statuses,
      cpuUs: (cpu1 - cpu0) / count,
      threads,
      acks: got.acks,
    }
  } finally {
    for (const stop of stops) await stop()
  }
}

const only202 = (r) => Object.keys(r.statuses).every((s) => s === '202')

/** The latency rows: WebSocket 500/s and 1,000/s, SSE 500/s, each beside its baseline. */
export async function latencyRows({ tls, ca, runs = 3, verbose = false }) {
  const seed = newSeeds(1)[0]
  const subscriber = await agentFromSeed(seed)
  const senders = await Promise.all(newSeeds(SENDERS).map(agentFromSeed))
  const tmp = scratch()
  try {
    const workload = join(tmp.dir, 'latency.ndjson')
    const most = 1 + Math.round((WARMUP_S + MEASURED_S) * 1000)
    writeItems(workload, await signedItems(senders, () => subscriber.id, most))
    const relay = { kind: 'relay', tls }
    const bare = { kind: 'push-bare', tls }
    const cases = {
      bare500: () => latencyRun({ server: bare, mode: 'raw', rate: 500, seed, workload, ca }),
      ws500: () => latencyRun({ server: relay, mode: 'ws', rate: 500, seed, workload, ca }),
      sse500: () => latencyRun({ server: relay, mode: 'sse', rate: 500, seed, workload, ca }),
      bare1000: () => latencyRun({ server: bare, mode: 'raw', rate: 1000, seed, workload, ca }),
      ws1000: () => latencyRun({ server: relay, mode: 'ws', rate: 1000, seed, workload, ca }),
    }
    const rounds = await alternatingRounds(runs, cases, { verbose, label: 'latency round' })
    const m = (f) => median(rounds.map(f))
    const sameRun = 'WebSocket, same run'
    // Latency rows in ms beside the bare server unless told otherwise.
    const row = (c, base, key, fields) =>
      pairedRow(rounds, c, base, key, {
        unit: 'ms',
        baselineName: 'bare https POST → ws push',
        ...fields,
      })
    const wsP99 = m((r) => r.ws500.p99)
    const ws1000p50 = m((r) => r.ws1000.p50)
    const no503 = rounds.every((r) => only202(r.ws1000))
    const sseAll = rounds.every((r) => r.sse500.delivered === r.sse500.sent && only202(r.sse500))
    const sseRatio = m((r) => r.sse500.p50 / r.ws500.p50)
    const verdict = (ok) => (ok ? 'met' : 'missed')
    return {
      rounds,
      rows: [
        row('ws500', 'bare500', 'p50', {
          name: `publish→push p50, WebSocket, 500/s (relay client → receiver; median of ${runs})`,
          target: '≤ 2.0×',
        }),
        row('ws500', 'bare500', 'p99', {
          name: 'publish→push p99, WebSocket, 500/s',
          target: 'p99 ≤ 20 ms',
          verdict: verdict(wsP99 <= 20),
        }),
        row('ws1000', 'bare1000', 'p50', {
          name: 'publish→push p50, WebSocket, 1,000/s sustained',
          target: 'p50 ≤ 5 ms, no 503',
          verdict: verdict(ws1000p50 <= 5 && no503),
        }),
        row('ws1000', 'bare1000', 'p99', {
          name: 'publish→push p99, WebSocket, 1,000/s',
          target: 'context',
        }),
        row('sse500', 'ws500', 'p50', {
          name: `publish→push p50, SSE, 500/s (delivered ${rounds.map((r) => `${r.sse500.delivered}/${r.sse500.sent}`).join(', ')}; acked in ${rounds.map((r) => `${r.sse500.acks.batches} POST /relay/ack + ${r.sse500.acks.deletes} DELETE`).join(', ')})`,
          baselineName: sameRun,
          target: 'all delivered, ≤ 1.5×',
          verdict: verdict(sseAll && sseRatio <= 1.5),
        }),
        row('sse500', 'ws500', 'p99', {
          name: 'publish→push p99, SSE, 500/s',
          baselineName: sameRun,
          target: 'context',
        }),
        row('sse500', 'ws500', 'cpuUs', {
          name: 'relay server CPU per pushed message, SSE vs WebSocket, 500/s (publish + push + ack)',
          unit: 'µs/msg',
          baselineName: sameRun,
          target: 'context (was 2×)',
        }),
      ],
    }
  } finally {
    tmp.cleanup()
  }
}
