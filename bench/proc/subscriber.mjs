/**
 * Subscribers in their own process (see harness.mjs).
 * - `subscribe {seeds}`: open the mailboxes (`POST /relay/subscribe`) of those agents.
 * - `stream {seeds, mode}`: each agent reads its mailbox through the relay CLIENT's stream
 *   (`'ws'` or `'sse'`, batched acks as the client does them) into an agent's receive pipeline
 *   (core's `createReceiver`: validate, verify, replay), as the relay transport feeds it; a
 *   message arrives when the receiver's `onMessage` runs.
 * - `rawws {url}`: a raw `ws` client of the bare push server, JSON-parsing each frame.
 * - `waitFor {n, timeoutMs}`: resolves once `n` distinct messages arrived (or the time is up).
 * - `collect`: → `{ids, arrivalNs, deliveries, acks, errors}` and starts over (`acks`: the HTTP
 *   acknowledgements sent: `POST /relay/ack` batches and entries, `DELETE`s).
 */

import { createReceiver, didKeyResolver } from '@agentmsg/core/receive'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { createRelayClient } from '@agentmsg/transport-relay'
import { WebSocket } from 'ws'
import { monoNs, serveCommands } from './harness.mjs'
import { agentFromSeed } from './workload.mjs'

// Experiment knob (issue 12 report): core's receiver hands each accepted message to the
// application with setTimeout(0), which Node clamps to 1 ms — most of the subscriber's share of
// the publish→push latency. BENCH_EXP_SET_IMMEDIATE=1 runs such timers as setImmediate in this
// process, to measure what that change would give.
if (process.env.BENCH_EXP_SET_IMMEDIATE) {
  const later = globalThis.setTimeout
  globalThis.setTimeout = (fn, ms, ...a) =>
    ms === 0 ? setImmediate(fn, ...a) : later(fn, ms, ...a)
}
let config
let arrivals = new Map()
let deliveries = 0
let errors = []
let waiters = []
const closers = []

function arrive(id) {
  if (arrivals.has(id)) return
  arrivals.set(id, monoNs())
  for (const w of waiters) if (arrivals.size >= w.n) w.resolve(arrivals.size)
  waiters = waiters.filter((w) => arrivals.size < w.n)
}

/** Acknowledgements over HTTP: `POST /relay/ack` batches and their entries, `DELETE`s. */
let acks = { batches: 0, entries: 0, deletes: 0 }

function countingAcks(inner) {
  return (input, init) => {
    const method = init?.method ?? 'GET'
    const path = new URL(String(input)).pathname
    if (method === 'POST' && path.endsWith('/relay/ack')) {
      acks.batches++
      acks.entries += JSON.parse(Buffer.from(init.body).toString('utf8')).acks.length
    } else if (method === 'DELETE' && path.includes('/relay/messages/')) acks.deletes++
    return inner(input, init)
  }
}

function client(agent, extra = {}) {
  const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
  const ca = config.ca
  class DevWebSocket extends WebSocket {
    constructor(u) {
      super(u, { ca })
    }
  }
  return createRelayClient({
    relayUrl: config.relayUrl,
    agent: agent.id,
    signer: agent.signer,
    fetch: countingAcks(createNodeFetch({ ca, addressPolicy: policy, maxSockets: 8 })),
    streamFetch: createNodeFetch({ ca, addressPolicy: policy, timeoutMs: 0 }),
    WebSocket: DevWebSocket,
    ...extra,
  })
}

async function subscribe({ seeds }) {
  const agents = await Promise.all(seeds.map(agentFromSeed))
  for (let i = 0; i < agents.length; i += 16) {
    await Promise.all(agents.slice(i, i + 16).map((a) => client(a).subscribe()))
  }
  return agents.length
}

async function stream({ seeds, mode, verify = true }) {
  for (const agent of await Promise.all(seeds.map(agentFromSeed))) {
    if (!verify) {
      // The stream alone (no receive pipeline): where the relay's part of the latency ends.
      const handle = client(agent).stream(
        async ({ value, messageId }) => {
          deliveries++
          arrive(
            messageId ??
              JSON.parse(typeof value === 'string' ? value : JSON.stringify(value)).message_id,
          )
        },
        { mode, onError: (e) => errors.push(String(e)) },
      )
      closers.push(() => handle.close())
      continue
    }
    const receiver = createReceiver({
      agentId: agent.id,
      resolver: didKeyResolver(),
      onMessage: async (message) => arrive(message.message_id),
      onError: (e) => errors.push(String(e)),
      maxQueue: 100_000,
      // BENCH_SUB_CRYPTO=inline|pool|auto: where the subscriber verifies (default: core's).
      ...(process.env.BENCH_SUB_CRYPTO ? { crypto: process.env.BENCH_SUB_CRYPTO } : {}),
    })
    const handle = client(agent).stream(
      async ({ value }) => {
        deliveries++
        const outcome = await receiver.receive({ body: value, transport: 'relay' })
        if (outcome.status === 'refused') errors.push(String(outcome.error))
      },
      { mode, onError: (e) => errors.push(String(e)) },
    )
    closers.push(async () => {
      await handle.close()
      await receiver.close({ drain: false })
    })
  }
  return seeds.length
}

async function rawws({ url }) {
  const ws = new WebSocket(`${url.replace('https:', 'wss:')}/ws`, { ca: config.ca })
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  ws.on('message', (data) => {
    deliveries++
    arrive(JSON.parse(data.toString('utf8')).message_id)
  })
  closers.push(async () => ws.terminate())
  return true
}

function waitFor({ n, timeoutMs = 30_000 }) {
  if (arrivals.size >= n) return arrivals.size
  return new Promise((resolve) => {
    const w = { n, resolve }
    waiters.push(w)
    setTimeout(() => {
      waiters = waiters.filter((x) => x !== w)
      resolve(arrivals.size)
    }, timeoutMs).unref()
  })
}

function collect() {
  const ids = [...arrivals.keys()]
  const arrivalNs = Float64Array.from(arrivals.values())
  const out = {
    ids,
    arrivalNs,
    deliveries,
    acks,
    errors: errors.slice(0, 5),
    errorCount: errors.length,
  }
  acks = { batches: 0, entries: 0, deletes: 0 }
  arrivals = new Map()
  deliveries = 0
  errors = []
  return out
}

serveCommands({
  init(msg) {
    config = msg.config
    return true
  },
  subscribe,
  stream,
  rawws,
  waitFor,
  collect,
  async close() {
    await Promise.all(closers.map((c) => c().catch(() => undefined)))
  },
})
