/**
 * The lean load generator of the scale section (scale.mjs), in its own process: many real
 * authenticated relay streams without a full agent behind each. Every stream is its own did:key
 * agent (keys from node:crypto), its mailbox opened with a signed `POST /relay/subscribe` (RFC
 * 9421 relay auth, core's `signRequest`), then read over a raw `ws` socket (challenge → core's
 * `signWsAuth` frame) or a raw `node:https` SSE request (signed `GET /relay/stream`). Sockets
 * are bound to loopback source addresses (`localAddress`, Linux routes all of 127/8 to lo),
 * `PER_ADDRESS` streams to each, under the relay's per-address caps (PROFILE §6, §9).
 * - `agents {from, to}`, `subscribe {from, to, topic?}`, `open {from, to, mode}`: make agents
 *   (by global index), open their mailboxes, open their streams.
 * - `latency {target, samples}`: sequential publishes to agent `target`, publish → push in ms.
 * - `fanout {topic, rounds, expect}`: ms from a topic publish until `expect` streams had it.
 * - `status`: streams open, refused (by status or close code), ended.
 */
import { Agent, request } from 'node:https'
import { didKeyFromPublicKey, ed25519Signer, generateKeyPair } from '@agentmsg/core'
import { signRequest, signWsAuth } from '@agentmsg/core/receive'
import { WebSocket } from 'ws'
import { padLengthFor, postJson, signRoundRobin } from '../publish-common.mjs'
import { serveCommands } from './harness.mjs'

/** Streams (and so agents) per source address: subscribe + open stay within a burst of 100. */
export const PER_ADDRESS = 50
const CONCURRENCY = 64
let config
/** Agents by global index: the streams are shared out over several processes. */
const agents = new Map()
const streams = []
const tally = { refused: {}, ended: 0, errors: [] }
/** message_id → arrivals `{n, last, done?}`. */
const arrivals = new Map()

/** Source address of agent `j`: 127.2.x.y, `PER_ADDRESS` agents each (never 127.0.0.1). */
const addressOf = (j) => {
  const a = Math.floor(j / PER_ADDRESS)
  return `127.${2 + Math.floor(a / 62_500)}.${Math.floor(a / 250) % 250}.${1 + (a % 250)}`
}
const httpAgents = new Map()
const httpAgentOf = (address) => {
  let a = httpAgents.get(address)
  if (!a) {
    a = new Agent({ keepAlive: true, maxSockets: 4, ca: config.ca, localAddress: address })
    httpAgents.set(address, a)
  }
  return a
}

async function makeAgent() {
  const keys = await generateKeyPair()
  return { id: didKeyFromPublicKey(keys.publicKey), signer: ed25519Signer(keys) }
}

function arrive(messageId) {
  const a = arrivals.get(messageId) ?? { n: 0, last: 0 }
  a.n++
  a.last = performance.now()
  arrivals.set(messageId, a)
  a.wake?.()
}

const ID = /"message_id":"([^"]+)"/

/** `task(i)` for every i in [from, to), `CONCURRENCY` at a time. */
async function each(from, to, task) {
  let next = from
  const worker = async () => {
    while (next < to) await task(next++)
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
}

/** A signed request (relay agent auth, PROFILE §9) from agent `j`; resolves status and body. */
async function signed(j, method, path, body, extra = {}) {
  const url = new URL(path, config.url).href
  const bytes = body && Buffer.from(JSON.stringify(body))
  const auth = await signRequest({ method, url, signer: agents.get(j).signer, body: bytes })
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method,
      agent: extra.agent ?? httpAgentOf(addressOf(j)),
      ca: config.ca,
      localAddress: addressOf(j),
      headers: { ...auth, ...(bytes && { 'content-type': 'application/json' }), ...extra.headers },
    })
    req.on('response', resolve)
    req.on('error', reject)
    req.end(bytes)
  })
}

async function subscribe({ from, to, topic }) {
  const statuses = {}
  await each(from, to, async (j) => {
    const subscribe = { agent: agents.get(j).id, ...(topic && { topics: [topic] }) }
    const res = await signed(j, 'POST', '/relay/subscribe', { subscribe })
    res.resume()
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
  })
  return statuses
}

function refused(why) {
  tally.refused[why] = (tally.refused[why] ?? 0) + 1
}

/** An SSE stream of agent `j`: open once the 200 came; events parsed as they complete. */
async function openSse(j) {
  const path = `/relay/stream?agent=${encodeURIComponent(agents.get(j).id)}`
  const res = await signed(j, 'GET', path, undefined, {
    agent: false,
    headers: { accept: 'text/event-stream' },
  })
  if (res.statusCode !== 200) {
    res.resume()
    return refused(res.statusCode)
  }
  let tail = ''
  res.setEncoding('utf8')
  res.on('data', (text) => {
    tail += text
    const end = tail.lastIndexOf('\n\n')
    if (end < 0) return
    for (const event of tail.slice(0, end).split('\n\n')) {
      if (event.includes('event: message')) arrive(ID.exec(event)?.[1])
    }
    tail = tail.slice(end + 2)
  })
  res.on('error', () => undefined)
  res.on('close', () => tally.ended++)
  streams.push(() => res.destroy())
}

/** A WebSocket of agent `j`: open once the auth frame went (the relay answers nothing more). */
function openWs(j) {
  const url = `${config.url.replace('https:', 'wss:')}/relay/ws`
  const ws = new WebSocket(url, {
    ca: config.ca,
    localAddress: addressOf(j),
    perMessageDeflate: false,
  })
  streams.push(() => ws.terminate())
  let authed = false
  return new Promise((resolve) => {
    ws.on('message', async (data) => {
      const text = data.toString()
      if (authed) {
        if (text.startsWith('{"type":"message"')) arrive(ID.exec(text)?.[1])
        else if (text.startsWith('{"type":"error"')) refused(JSON.parse(text).code)
        return
      }
      authed = true
      const { nonce } = JSON.parse(text)
      const { id, signer } = agents.get(j)
      const auth = await signWsAuth({ relayBaseUrl: config.url, nonce, signer, agent: id })
      ws.send(JSON.stringify(auth), resolve)
    })
    ws.on('error', (e) => {
      tally.errors.push(String(e.message))
      resolve()
    })
    ws.on('close', (code) => {
      tally.ended++
      if (code !== 1006) refused(`close ${code}`)
      resolve()
    })
  })
}

/** Publish `items` one after the other from rotating source addresses (127.3.0.x). */
async function timedPublishes(items, settled) {
  const out = []
  for (let i = 0; i < items.length; i++) {
    const address = `127.3.0.${1 + Math.floor(i / 40)}`
    const t0 = performance.now()
    const status = postJson(`${config.url}/relay/publish`, httpAgentOf(address), items[i].body)
    const arrived = new Promise((resolve) => {
      const a = arrivals.get(items[i].id) ?? { n: 0, last: 0 }
      arrivals.set(items[i].id, a)
      a.wake = () => settled(a) && resolve(a.last)
      a.wake()
      // Streams lost meanwhile: NaN, reported, rather than a wait without end.
      setTimeout(() => resolve(Number.NaN), 30_000).unref()
    })
    const s = await status
    if (s !== 202) throw new Error(`publish answered ${s}`)
    out.push((await arrived) - t0)
  }
  return out
}

let sender
let padLength
async function messages(to, count) {
  sender ??= await makeAgent()
  padLength ??= await padLengthFor([sender], to, 1024)
  const shape = (m) => ({ id: m.message_id, body: Buffer.from(JSON.stringify(m)) })
  return signRoundRobin([sender], to, count, padLength, shape)
}

serveCommands({
  init(msg) {
    config = msg.config
    return { pid: process.pid }
  },
  async agents({ from, to }) {
    for (let j = from; j < to; j++) agents.set(j, await makeAgent())
    return agents.size
  },
  subscribe,
  async open({ from, to, mode }) {
    await each(from, to, (j) => (mode === 'ws' ? openWs(j) : openSse(j)))
    return streams.length
  },
  async latency({ target, samples }) {
    const items = await messages(() => agents.get(target).id, samples)
    return (await timedPublishes(items, (a) => a.n >= 1)).sort((a, b) => a - b)
  },
  async fanout({ topic, rounds, expect }) {
    const items = await messages(() => ({ topic }), rounds)
    return timedPublishes(items, (a) => a.n >= expect)
  },
  status: () => ({ streams: streams.length, ...tally, errors: tally.errors.slice(0, 3) }),
  close() {
    for (const end of streams.splice(0)) end()
    for (const a of httpAgents.values()) a.destroy()
  },
})
