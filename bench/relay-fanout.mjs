/**
 * Relay benchmark 2 (see bench/relay.mjs): one topic's messages fanned out to `FANOUT`
 * WebSocket subscribers, deliveries/s, against the bare server broadcasting to as many raw
 * `ws` clients.
 */

import { signWsAuth } from '@agentmsg/core/receive'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { createRelayClient } from '@agentmsg/transport-relay'
import { WebSocket } from 'ws'
import {
  counter,
  makeAgent,
  publisher,
  RUN_TIMEOUT_MS,
  signedMessages,
  startBare,
  startRelay,
  verbose,
  withTimeout,
} from './relay-common.mjs'

export const FANOUT = Number(process.env.BENCH_FANOUT ?? 1_000)
export const FANOUT_MESSAGES = 20
const FANOUT_TOPIC = 'bench.fanout'

/** Open `n` sockets, `batch` at a time; `setup(ws, i)` attaches handlers before 'open'. */
async function openSockets(url, ca, n, setup, batch = 50) {
  const sockets = []
  for (let i = 0; i < n; i += batch) {
    const opened = Array.from({ length: Math.min(batch, n - i) }, (_, j) => {
      const ws = new WebSocket(url, { ca })
      sockets.push(ws)
      setup(ws, i + j)
      return new Promise((resolve, reject) => {
        ws.once('open', resolve)
        ws.once('error', reject)
      })
    })
    await Promise.all(opened)
  }
  return sockets
}

/** Publish `items` all at once; resolves with deliveries/s once `expected` frames arrived. */
async function fanoutRound(url, ca, items, expected, arrivals) {
  const pub = publisher(url, ca, 64)
  const all = counter(expected)
  arrivals.onFrame = () => all.arrive()
  const start = performance.now()
  const statuses = await Promise.all(items.map((item) => pub.send(item.body)))
  pub.close()
  if (statuses.some((s) => s !== 202))
    throw new Error(`fan-out publish answered ${statuses.find((s) => s !== 202)}`)
  const end = await withTimeout(
    all.done,
    RUN_TIMEOUT_MS,
    `fan-out: ${all.count} of ${expected} frames`,
  )
  return { rate: (expected * 1000) / (end - start), ms: end - start }
}

export async function benchFanout(tls) {
  const publisherAgent = await makeAgent()
  const topic = () => ({ topic: FANOUT_TOPIC })
  // Messages: one warm-up per side plus two measured rounds per side.
  const msgs = await signedMessages([publisherAgent], topic, 2 + 4 * FANOUT_MESSAGES)
  const [warmBare, warmRelay] = msgs
  const rounds = [0, 1, 2, 3].map((r) =>
    msgs.slice(2 + r * FANOUT_MESSAGES, 2 + (r + 1) * FANOUT_MESSAGES),
  )

  // The relay: FANOUT did:key agents subscribed to the topic (over HTTP, not timed).
  const { url, close } = await startRelay(tls)
  const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
  const fetch = createNodeFetch({ ca: tls.ca, addressPolicy: policy, maxSockets: 32 })
  const agents = await Promise.all(Array.from({ length: FANOUT }, makeAgent))
  for (let i = 0; i < agents.length; i += 32) {
    await Promise.all(
      agents.slice(i, i + 32).map((a) =>
        createRelayClient({ relayUrl: url, agent: a.id, signer: a.signer, fetch }).subscribe({
          topics: [FANOUT_TOPIC],
        }),
      ),
    )
  }
  const relayArrivals = { onFrame: () => {} }
  const relaySockets = await openSockets(
    `${url.replace('https:', 'wss:')}/relay/ws`,
    tls.ca,
    FANOUT,
    (ws, i) => {
      let authed = false
      ws.on('message', (data) => {
        if (authed) return relayArrivals.onFrame()
        const frame = JSON.parse(data.toString('utf8'))
        if (frame.type !== 'challenge') throw new Error(`fan-out: unexpected first frame ${data}`)
        authed = true
        signWsAuth({
          relayBaseUrl: url,
          nonce: frame.nonce,
          signer: agents[i].signer,
          agent: agents[i].id,
        }).then((auth) => ws.send(JSON.stringify(auth)))
      })
    },
  )

  // The baseline: the same number of raw ws clients on the bare server.
  const bare = await startBare(tls, { wrap: true })
  const bareArrivals = { onFrame: () => {} }
  const bareSockets = await openSockets(
    `${bare.url.replace('https:', 'wss:')}/ws`,
    tls.ca,
    FANOUT,
    (ws) => ws.on('message', () => bareArrivals.onFrame()),
  )

  try {
    // Warm-up: one message each, which also proves every relay feed is live.
    await fanoutRound(bare.url, tls.ca, [warmBare], FANOUT, bareArrivals)
    await fanoutRound(url, tls.ca, [warmRelay], FANOUT, relayArrivals)
    const expected = FANOUT * FANOUT_MESSAGES
    const b1 = await fanoutRound(bare.url, tls.ca, rounds[0], expected, bareArrivals)
    const r1 = await fanoutRound(url, tls.ca, rounds[1], expected, relayArrivals)
    const r2 = await fanoutRound(url, tls.ca, rounds[2], expected, relayArrivals)
    const b2 = await fanoutRound(bare.url, tls.ca, rounds[3], expected, bareArrivals)
    if (verbose) console.log({ fanout: { b1, r1, r2, b2 } })
    return {
      relay: Math.max(r1.rate, r2.rate),
      bare: Math.max(b1.rate, b2.rate),
      bytes: warmRelay.body.length,
    }
  } finally {
    for (const ws of [...relaySockets, ...bareSockets]) ws.terminate()
    await bare.close()
    await close()
  }
}
