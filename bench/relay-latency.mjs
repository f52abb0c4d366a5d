/**
 * Relay benchmark 1 (see bench/relay.mjs): publish→push latency at `RATE` msg/s through the
 * relay client's stream (`ws` and `sse`) into an agent's receive pipeline, against the bare
 * https POST → ws push server, in alternating order.
 */

import { createReceiver, didKeyResolver } from '@agentmsg/core/receive'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { createRelayClient } from '@agentmsg/transport-relay'
import { WebSocket } from 'ws'
import { percentile } from './lib.mjs'
import {
  counter,
  makeAgent,
  publisher,
  signedMessages,
  startBare,
  startRelay,
  verbose,
  withTimeout,
} from './relay-common.mjs'

// BENCH_RELAY_RATE lowers the publish rate on a machine that cannot sustain 1,000/s in one process.
export const RATE = Number(process.env.BENCH_RELAY_RATE ?? 1_000)
const LAT_WARMUP = Math.round(0.3 * RATE)
const LAT_MEASURED = Math.round(3.5 * RATE)
const LAT_SENDERS = 8

/**
 * Paced publishes of `items` at RATE; `arrivals` maps message id → receive time (filled by
 * the subscriber). The first LAT_WARMUP are not measured.
 */
async function pacedRun(url, ca, items, arrivals, what) {
  const pub = publisher(url, ca, 64)
  const sentAt = new Map()
  let bad = 0
  const all = counter(items.length)
  arrivals.onArrive = () => all.arrive()
  const sends = []
  await new Promise((resolve) => {
    let i = 0
    const t0 = performance.now()
    const tick = () => {
      const due = Math.min(items.length, Math.floor(((performance.now() - t0) * RATE) / 1000) + 1)
      while (i < due) {
        const item = items[i++]
        sentAt.set(item.id, performance.now())
        sends.push(pub.send(item.body).then((s) => void (s !== 202 && bad++)))
      }
      if (i < items.length) setTimeout(tick, 1)
      else resolve()
    }
    tick()
  })
  await Promise.all(sends)
  await withTimeout(all.done, 30_000, `${what}: waiting for ${items.length - all.count} pushes`)
  pub.close()
  if (bad > 0) throw new Error(`${what}: ${bad} publishes not answered 202`)
  const lat = []
  for (const item of items.slice(LAT_WARMUP)) lat.push(arrivals.get(item.id) - sentAt.get(item.id))
  lat.sort((a, b) => a - b)
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length }
}

function arrivalMap() {
  const m = new Map()
  m.onArrive = () => {}
  m.mark = (id) => {
    if (!m.has(id)) {
      m.set(id, performance.now())
      m.onArrive()
    }
  }
  return m
}

async function latencyBare(tls, items, ping) {
  const bare = await startBare(tls)
  const arrivals = arrivalMap()
  const ws = new WebSocket(`${bare.url.replace('https:', 'wss:')}/ws`, { ca: tls.ca })
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  ws.on('message', (data) => arrivals.mark(JSON.parse(data.toString('utf8')).message_id))
  const pub = publisher(bare.url, tls.ca, 1)
  await pub.send(ping.body)
  pub.close()
  const result = await pacedRun(bare.url, tls.ca, items, arrivals, 'bare latency')
  ws.terminate()
  await bare.close()
  return result
}

async function latencyRelay(tls, mode, subscriber, senders) {
  const { url, close } = await startRelay(tls)
  const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
  class DevWebSocket extends WebSocket {
    constructor(u) {
      super(u, { ca: tls.ca })
    }
  }
  const client = createRelayClient({
    relayUrl: url,
    agent: subscriber.id,
    signer: subscriber.signer,
    fetch: createNodeFetch({ ca: tls.ca, addressPolicy: policy }),
    streamFetch: createNodeFetch({ ca: tls.ca, addressPolicy: policy, timeoutMs: 0 }),
    WebSocket: DevWebSocket,
  })
  await client.subscribe()
  const [ping, ...items] = await signedMessages(
    senders,
    () => subscriber.id,
    LAT_WARMUP + LAT_MEASURED + 1,
  )
  const arrivals = arrivalMap()
  const errors = []
  // The subscriber's receive side, as an agent's relay transport runs it: each entry through
  // the pipeline (validate, verify, replay, level), acked once accepted.
  const receiver = createReceiver({
    agentId: subscriber.id,
    resolver: didKeyResolver(),
    onMessage: async (message) => arrivals.mark(message.message_id),
    onError: (e) => errors.push(e),
    maxQueue: 100_000,
  })
  const handle = client.stream(
    async ({ value }) => {
      const outcome = await receiver.receive({ body: value, transport: 'relay' })
      if (outcome.status === 'refused') errors.push(outcome.error)
    },
    { mode, onError: (e) => errors.push(e) },
  )
  const pingSeen = counter(1)
  arrivals.onArrive = () => pingSeen.arrive()
  const pub = publisher(url, tls.ca, 1)
  const status = await pub.send(ping.body)
  pub.close()
  if (status !== 202) throw new Error(`relay ${mode}: ping publish answered ${status}`)
  await withTimeout(pingSeen.done, 10_000, `relay ${mode}: ping`)
  try {
    return await pacedRun(url, tls.ca, items, arrivals, `relay ${mode} latency`)
  } finally {
    await handle.close()
    await receiver.close({ drain: false })
    await close()
    if (errors.length > 0) console.log(`relay ${mode} stream errors:`, errors.slice(0, 3))
  }
}

const lower = (a, b) => (a.p50 <= b.p50 ? a : b)

export async function benchLatency(tls) {
  const subscriber = await makeAgent()
  const senders = await Promise.all(Array.from({ length: LAT_SENDERS }, makeAgent))
  const [ping, ...bareItems] = await signedMessages(
    senders,
    () => subscriber.id,
    LAT_WARMUP + LAT_MEASURED + 1,
  )
  // Alternating order (bare, ws, sse, sse, ws, bare); the better of each pair counts.
  const bare1 = await latencyBare(tls, bareItems, ping)
  const ws1 = await latencyRelay(tls, 'ws', subscriber, senders)
  const sse1 = await latencyRelay(tls, 'sse', subscriber, senders)
  const sse2 = await latencyRelay(tls, 'sse', subscriber, senders)
  const ws2 = await latencyRelay(tls, 'ws', subscriber, senders)
  const bare2 = await latencyBare(tls, bareItems, ping)
  if (verbose) console.log({ bare1, ws1, sse1, sse2, ws2, bare2 })
  return {
    bytes: ping.body.length,
    bare: lower(bare1, bare2),
    ws: lower(ws1, ws2),
    sse: lower(sse1, sse2),
  }
}
