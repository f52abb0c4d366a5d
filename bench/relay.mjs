/**
 * The relay over real HTTPS (a dev certificate, loopback), every figure beside a baseline
 * measured in the same run on the same TLS setup:
 *
 * 1. Publish→push latency at `RATE` msg/s: paced publishes of ~1 KB signed direct messages
 *    over a keep-alive https.Agent (POST /relay/publish), one subscriber receiving through the
 *    relay CLIENT's stream (`mode: 'ws'` and `mode: 'sse'`) into an agent's receive pipeline
 *    (core's `createReceiver`, as the relay transport feeds it), so the figure includes the
 *    re-verification of every message and its ack. Latency = the receiver's `onMessage` call −
 *    publish send, same process clock. Baseline: a bare node:https server whose POST handler pushes the body
 *    to the connected `ws` socket without storing it, received by a raw `ws` client that
 *    JSON-parses the frame (same cert, same message bytes, same pacing).
 * 2. Fan-out: one topic message to `FANOUT` WebSocket subscribers (did:key agents subscribed to
 *    one topic through the relay; raw `ws` clients doing the challenge/auth, then counting
 *    frames, no parse, no ack). `FANOUT_MESSAGES` topic messages published at once; deliveries/s
 *    until all arrive. Baseline: the bare server broadcasting each POSTed body, wrapped in the
 *    relay's frame shape, to the same number of raw `ws` clients.
 * 3. Durable publishes/s through the relay's HTTP publish, `CONCURRENCY` publishers, direct
 *    messages to subscribed mailboxes, beside bench/relay-store.mjs's store-level figure.
 *
 * The relay's per-address and per-sender limits (PROFILE §6) are lifted (Infinity): all load
 * comes from one address and a few senders — the load generator, not an abuser. Everything
 * (load, relay, subscribers) runs in this one process, as for the baselines.
 *
 * The three live in bench/relay-latency.mjs, bench/relay-fanout.mjs and
 * bench/relay-throughput.mjs, on what bench/relay-common.mjs provides; this file puts the rows
 * together.
 *
 * Standalone (after `npm run build`): `node bench/relay.mjs` (`BENCH_VERBOSE=1` prints runs).
 */
import { pathToFileURL } from 'node:url'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { printTable } from './lib.mjs'
import { benchFanout, FANOUT, FANOUT_MESSAGES } from './relay-fanout.mjs'
import { benchLatency, RATE } from './relay-latency.mjs'
import { benchThroughput, CONCURRENCY } from './relay-throughput.mjs'

/**
 * All relay rows. `storeRows` are bench/relay-store.mjs's rows when the caller already ran it
 * (run.mjs prints them as their own table); otherwise it is run here for the baseline.
 */
export async function benchRelay({ storeRows } = {}) {
  // `ca` (the development CA) is what the benchmark's clients trust.
  const { cert, key, ca } = await createDevCertificate()
  const tls = { cert, key, ca }
  const lat = await benchLatency(tls)
  const fan = await benchFanout(tls)
  const tp = await benchThroughput(tls)
  if (!storeRows) storeRows = await (await import('./relay-store.mjs')).benchRelayStore()
  const store = storeRows[0].value
  const lifted = 'limits lifted'
  const bareName = 'bare https POST → ws push'
  const latRows = (mode, r) => [
    {
      name: `publish→push p50, ${mode} (relay client stream → receiver), ${lat.bytes} B @ ${RATE}/s, ${lifted}`,
      value: r.p50,
      unit: 'ms',
      baseline: lat.bare.p50,
      baselineName: bareName,
      ratio: r.p50 / lat.bare.p50,
      target: '≤ 2.0×',
    },
    {
      name: `publish→push p99, ${mode}`,
      value: r.p99,
      unit: 'ms',
      baseline: lat.bare.p99,
      baselineName: bareName,
      ratio: r.p99 / lat.bare.p99,
      target: 'context (lower is better)',
    },
  ]
  return [
    ...latRows('ws', lat.ws),
    ...latRows('sse', lat.sse),
    {
      name: `fan-out to ${FANOUT} ws subscribers, ${FANOUT_MESSAGES} topic msgs (${fan.bytes} B), ${lifted}`,
      value: fan.relay,
      unit: 'deliveries/s',
      baseline: fan.bare,
      baselineName: `bare ws broadcast to ${FANOUT}`,
      ratio: fan.relay / fan.bare,
      target: '≥ 0.5×',
    },
    {
      name: `durable HTTP publish, ${tp.bytes} B direct, ${CONCURRENCY} concurrent, ${lifted}`,
      value: tp.rps,
      unit: 'msg/s',
      baseline: store,
      baselineName: 'sqliteRelayStore.publish alone (relay-store)',
      ratio: tp.rps / store,
      target: 'context',
    },
  ]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printTable('relay over HTTPS (dev certificate, loopback)', await benchRelay())
}
