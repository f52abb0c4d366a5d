/**
 * The relay over real HTTPS (a dev certificate, loopback), every figure beside a baseline
 * measured in the same run on the same TLS setup:
 *
 * 1. Publish→push latency at `RATE` msg/s: paced publishes of ~1 KB signed direct messages
 *    over a keep-alive https.Agent (POST /relay/publish), one subscriber receiving through the
 *    relay CLIENT's stream (`mode: 'ws'` and `mode: 'sse'`; so the figure includes the client's
 *    own re-verification of every message and its ack). Latency = handler call − publish send,
 *    same process clock. Baseline: a bare node:https server whose POST handler pushes the body
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
 * Standalone (after `npm run build`): `node bench/relay.mjs` (`BENCH_VERBOSE=1` prints runs).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { Agent, createServer, request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { WebSocket, WebSocketServer } from 'ws'
import {
  createMessage,
  didKeyFromPublicKey,
  didKeyResolver,
  ed25519Signer,
  generateKeyPair,
  signMessage,
} from '@agentmsg/core'
import { serveRelay } from '@agentmsg/relay'
import { createAddressPolicy, createDevCertificate, createNodeFetch } from '@agentmsg/transport-https/node'
import { createRelayClient, signWsAuth } from '@agentmsg/transport-relay'
import { percentile, printTable } from './lib.mjs'

// BENCH_RELAY_RATE lowers the publish rate on a machine that cannot sustain 1,000/s in one process.
const RATE = Number(process.env.BENCH_RELAY_RATE ?? 1_000)
const LAT_WARMUP = Math.round(0.3 * RATE)
const LAT_MEASURED = Math.round(3.5 * RATE)
const LAT_SENDERS = 8
const FANOUT = Number(process.env.BENCH_FANOUT ?? 1_000)
const FANOUT_MESSAGES = 20
const FANOUT_TOPIC = 'bench.fanout'
const CONCURRENCY = 256
const TP_SENDERS = 32
const TP_WARMUP = 1_000
const TP_MEASURED = 12_000
const TP_MAX_MS = 15_000
const TARGET_BYTES = 1024
const RUN_TIMEOUT_MS = 60_000
const verbose = !!process.env.BENCH_VERBOSE
const LIFTED = {
  perAddress: { perMinute: Infinity },
  perSender: { perMinute: Infinity },
}

// ---------------------------------------------------------------------------------------------
// Messages

async function makeAgent() {
  const keys = await generateKeyPair()
  const id = didKeyFromPublicKey(keys.publicKey)
  return { id, signer: ed25519Signer(keys) }
}

const SENTENCE = 'Could you check the calendar for next week and propose two slots? '
let padLength

/** Signed messages of ~TARGET_BYTES, round-robin over `senders`, to `to(i)`. */
async function signedMessages(senders, to, count) {
  const build = (sender, i, text) =>
    signMessage(
      createMessage({
        from: sender.id,
        to: to(i),
        conversationId: `c-${i % senders.length}`,
        sequence: i,
        phase: 'request',
        ttlSeconds: 86_400,
        parts: [{ type: 'text', text }],
      }),
      sender.signer,
    )
  if (padLength === undefined) {
    const probe = Buffer.byteLength(JSON.stringify(await build(senders[0], 0, '')))
    padLength = Math.max(0, TARGET_BYTES - probe)
  }
  const text = SENTENCE.repeat(Math.ceil(padLength / SENTENCE.length)).slice(0, padLength)
  const out = []
  for (let i = 0; i < count; i += 256) {
    const batch = Array.from({ length: Math.min(256, count - i) }, async (_, j) => {
      const signed = await build(senders[(i + j) % senders.length], i + j, text)
      return { id: signed.message_id, body: Buffer.from(JSON.stringify(signed)) }
    })
    out.push(...(await Promise.all(batch)))
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Servers and clients

async function startRelay(tls) {
  const dataDir = mkdtempSync(join(tmpdir(), 'relay-bench-'))
  const relay = await serveRelay({
    dataDir,
    tls,
    allowPrivate: ['127.0.0.1'],
    limits: LIFTED,
    closeTimeoutMs: 2_000,
  })
  return {
    url: relay.url,
    relay,
    close: async () => {
      await relay.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * The baseline: node:https with the same TLS setup; POST bodies are pushed to every connected
 * `ws` socket (wrapped as the relay wraps them when `wrap`), not stored; answers 202.
 */
async function startBare(tls, { wrap = false } = {}) {
  const wss = new WebSocketServer({ noServer: true })
  let seq = 0
  const server = createServer({ ...tls, minVersion: 'TLSv1.2' }, (req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
      const frame = wrap
        ? `{"type":"message","cursor":"${(++seq).toString().padStart(12, '0')}","message":${body}}`
        : body
      for (const ws of wss.clients) if (ws.readyState === WebSocket.OPEN) ws.send(frame, { binary: false })
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"accepted"}')
    })
  })
  server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)))
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `https://127.0.0.1:${server.address().port}`,
    close: async () => {
      for (const ws of wss.clients) ws.terminate()
      await new Promise((r) => wss.close(r))
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    },
  }
}

function publisher(url, ca, maxSockets) {
  const agent = new Agent({ keepAlive: true, maxSockets, ca })
  const target = `${url}/relay/publish`
  const send = (body) =>
    new Promise((resolve, reject) => {
      const req = request(
        target,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': body.length },
        },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode))
        },
      )
      req.on('error', reject)
      req.end(body)
    })
  return { send, close: () => agent.destroy() }
}

function withTimeout(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/** Resolves once `n` arrivals were counted by `arrive()` (a promise plus the counter). */
function counter(n) {
  let count = 0
  let resolve
  const done = new Promise((r) => (resolve = r))
  if (n === 0) resolve()
  return {
    done,
    arrive() {
      if (++count === n) resolve(performance.now())
    },
    get count() {
      return count
    },
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Latency

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
  const ws = new WebSocket(`${bare.url.replace('https:', 'wss:')}/ws`, { ca: tls.cert })
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  ws.on('message', (data) => arrivals.mark(JSON.parse(data.toString('utf8')).message_id))
  const pub = publisher(bare.url, tls.cert, 1)
  await pub.send(ping.body)
  pub.close()
  const result = await pacedRun(bare.url, tls.cert, items, arrivals, 'bare latency')
  ws.terminate()
  await bare.close()
  return result
}

async function latencyRelay(tls, mode, subscriber, senders) {
  const { url, close } = await startRelay(tls)
  const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
  class DevWebSocket extends WebSocket {
    constructor(u) {
      super(u, { ca: tls.cert })
    }
  }
  const client = createRelayClient({
    relayUrl: url,
    agent: subscriber.id,
    signer: subscriber.signer,
    resolver: didKeyResolver(),
    fetch: createNodeFetch({ ca: tls.cert, addressPolicy: policy }),
    streamFetch: createNodeFetch({ ca: tls.cert, addressPolicy: policy, timeoutMs: 0 }),
    WebSocket: DevWebSocket,
  })
  await client.subscribe()
  const [ping, ...items] = await signedMessages(senders, () => subscriber.id, LAT_WARMUP + LAT_MEASURED + 1)
  const arrivals = arrivalMap()
  const errors = []
  const handle = client.stream(({ message }) => arrivals.mark(message.message_id), {
    mode,
    onError: (e) => errors.push(e),
  })
  const pingSeen = counter(1)
  arrivals.onArrive = () => pingSeen.arrive()
  const pub = publisher(url, tls.cert, 1)
  const status = await pub.send(ping.body)
  pub.close()
  if (status !== 202) throw new Error(`relay ${mode}: ping publish answered ${status}`)
  await withTimeout(pingSeen.done, 10_000, `relay ${mode}: ping`)
  try {
    return await pacedRun(url, tls.cert, items, arrivals, `relay ${mode} latency`)
  } finally {
    await handle.close()
    await close()
    if (errors.length > 0) console.log(`relay ${mode} stream errors:`, errors.slice(0, 3))
  }
}

const lower = (a, b) => (a.p50 <= b.p50 ? a : b)

async function benchLatency(tls) {
  const subscriber = await makeAgent()
  const senders = await Promise.all(Array.from({ length: LAT_SENDERS }, makeAgent))
  const [ping, ...bareItems] = await signedMessages(senders, () => subscriber.id, LAT_WARMUP + LAT_MEASURED + 1)
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

// ---------------------------------------------------------------------------------------------
// 2. Fan-out

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
  if (statuses.some((s) => s !== 202)) throw new Error(`fan-out publish answered ${statuses.find((s) => s !== 202)}`)
  const end = await withTimeout(all.done, RUN_TIMEOUT_MS, `fan-out: ${all.count} of ${expected} frames`)
  return { rate: (expected * 1000) / (end - start), ms: end - start }
}

async function benchFanout(tls) {
  const publisherAgent = await makeAgent()
  const topic = () => ({ topic: FANOUT_TOPIC })
  // Messages: one warm-up per side plus two measured rounds per side.
  const msgs = await signedMessages([publisherAgent], topic, 2 + 4 * FANOUT_MESSAGES)
  const [warmBare, warmRelay] = msgs
  const rounds = [0, 1, 2, 3].map((r) => msgs.slice(2 + r * FANOUT_MESSAGES, 2 + (r + 1) * FANOUT_MESSAGES))

  // The relay: FANOUT did:key agents subscribed to the topic (over HTTP, not timed).
  const { url, close } = await startRelay(tls)
  const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
  const fetch = createNodeFetch({ ca: tls.cert, addressPolicy: policy, maxSockets: 32 })
  const agents = await Promise.all(Array.from({ length: FANOUT }, makeAgent))
  for (let i = 0; i < agents.length; i += 32) {
    await Promise.all(
      agents.slice(i, i + 32).map((a) =>
        createRelayClient({ relayUrl: url, agent: a.id, signer: a.signer, resolver: didKeyResolver(), fetch }).subscribe({
          topics: [FANOUT_TOPIC],
        }),
      ),
    )
  }
  const relayArrivals = { onFrame: () => {} }
  const relaySockets = await openSockets(`${url.replace('https:', 'wss:')}/relay/ws`, tls.cert, FANOUT, (ws, i) => {
    let authed = false
    ws.on('message', (data) => {
      if (authed) return relayArrivals.onFrame()
      const frame = JSON.parse(data.toString('utf8'))
      if (frame.type !== 'challenge') throw new Error(`fan-out: unexpected first frame ${data}`)
      authed = true
      signWsAuth({ relayBaseUrl: url, nonce: frame.nonce, signer: agents[i].signer, agent: agents[i].id }).then((auth) =>
        ws.send(JSON.stringify(auth)),
      )
    })
  })

  // The baseline: the same number of raw ws clients on the bare server.
  const bare = await startBare(tls, { wrap: true })
  const bareArrivals = { onFrame: () => {} }
  const bareSockets = await openSockets(`${bare.url.replace('https:', 'wss:')}/ws`, tls.cert, FANOUT, (ws) =>
    ws.on('message', () => bareArrivals.onFrame()),
  )

  try {
    // Warm-up: one message each, which also proves every relay feed is live.
    await fanoutRound(bare.url, tls.cert, [warmBare], FANOUT, bareArrivals)
    await fanoutRound(url, tls.cert, [warmRelay], FANOUT, relayArrivals)
    const expected = FANOUT * FANOUT_MESSAGES
    const b1 = await fanoutRound(bare.url, tls.cert, rounds[0], expected, bareArrivals)
    const r1 = await fanoutRound(url, tls.cert, rounds[1], expected, relayArrivals)
    const r2 = await fanoutRound(url, tls.cert, rounds[2], expected, relayArrivals)
    const b2 = await fanoutRound(bare.url, tls.cert, rounds[3], expected, bareArrivals)
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

// ---------------------------------------------------------------------------------------------
// 3. Durable publish throughput

async function benchThroughput(tls) {
  const { url, close } = await startRelay(tls)
  try {
    const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
    const fetch = createNodeFetch({ ca: tls.cert, addressPolicy: policy, maxSockets: 32 })
    const recipients = await Promise.all(Array.from({ length: CONCURRENCY }, makeAgent))
    for (let i = 0; i < recipients.length; i += 32) {
      await Promise.all(
        recipients
          .slice(i, i + 32)
          .map((a) => createRelayClient({ relayUrl: url, agent: a.id, signer: a.signer, resolver: didKeyResolver(), fetch }).subscribe()),
      )
    }
    const senders = await Promise.all(Array.from({ length: TP_SENDERS }, makeAgent))
    const items = await signedMessages(senders, (i) => recipients[i % CONCURRENCY].id, TP_WARMUP + TP_MEASURED)
    const pub = publisher(url, tls.cert, CONCURRENCY)
    const run = async (slice, maxMs) => {
      let next = 0
      let bad = 0
      const end = performance.now() + maxMs
      const worker = async () => {
        while (next < slice.length && performance.now() < end) {
          if ((await pub.send(slice[next++].body)) !== 202) bad++
        }
      }
      const start = performance.now()
      await Promise.all(Array.from({ length: CONCURRENCY }, worker))
      if (bad > 0) throw new Error(`throughput: ${bad} publishes not answered 202`)
      return { rps: (next * 1000) / (performance.now() - start), n: next }
    }
    await run(items.slice(0, TP_WARMUP), TP_MAX_MS)
    const result = await run(items.slice(TP_WARMUP), TP_MAX_MS)
    pub.close()
    return { ...result, bytes: items[0].body.length }
  } finally {
    await close()
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * All relay rows. `storeRows` are bench/relay-store.mjs's rows when the caller already ran it
 * (run.mjs prints them as their own table); otherwise it is run here for the baseline.
 */
export async function benchRelay({ storeRows } = {}) {
  const { cert, key } = await createDevCertificate()
  const tls = { cert, key }
  const lat = await benchLatency(tls)
  const fan = await benchFanout(tls)
  const tp = await benchThroughput(tls)
  if (!storeRows) storeRows = await (await import('./relay-store.mjs')).benchRelayStore()
  const store = storeRows[0].value
  const lifted = 'limits lifted'
  const bareName = 'bare https POST → ws push'
  const latRows = (mode, r) => [
    {
      name: `publish→push p50, ${mode} (relay client stream), ${lat.bytes} B @ ${RATE}/s, ${lifted}`,
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
