/**
 * What the relay benchmarks share (bench/relay.mjs and its parts): ~1 KB signed messages, a
 * relay with the limits lifted, the bare node:https + `ws` baseline server, a keep-alive
 * publisher, and small waiting helpers.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { Agent, createServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { didKeyFromPublicKey, ed25519Signer, generateKeyPair } from '@agentmsg/core'
import { serveRelay } from '@agentmsg/relay'
import { WebSocket, WebSocketServer } from 'ws'
import { padLengthFor, postJson, signRoundRobin } from './publish-common.mjs'

const TARGET_BYTES = 1024
export const RUN_TIMEOUT_MS = 60_000
export const verbose = !!process.env.BENCH_VERBOSE
const LIFTED = {
  perAddress: { perMinute: Infinity },
  perSender: { perMinute: Infinity },
}

// ---------------------------------------------------------------------------------------------
// Messages

export async function makeAgent() {
  const keys = await generateKeyPair()
  const id = didKeyFromPublicKey(keys.publicKey)
  return { id, signer: ed25519Signer(keys) }
}

let padLength

/** Signed messages of ~TARGET_BYTES, round-robin over `senders`, to `to(i)`. */
export async function signedMessages(senders, to, count) {
  // Sized by the first workload: every later one pads its messages the same.
  if (padLength === undefined) padLength = await padLengthFor(senders, to, TARGET_BYTES)
  return signRoundRobin(senders, to, count, padLength, (signed) => ({
    id: signed.message_id,
    body: Buffer.from(JSON.stringify(signed)),
  }))
}

// ---------------------------------------------------------------------------------------------
// Servers and clients

export async function startRelay(tls) {
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
export async function startBare(tls, { wrap = false } = {}) {
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
      for (const ws of wss.clients)
        if (ws.readyState === WebSocket.OPEN) ws.send(frame, { binary: false })
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"accepted"}')
    })
  })
  server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)),
  )
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

export function publisher(url, ca, maxSockets) {
  const agent = new Agent({ keepAlive: true, maxSockets, ca })
  const target = `${url}/relay/publish`
  const send = (body) => postJson(target, agent, body)
  return { send, close: () => agent.destroy() }
}

export function withTimeout(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/** Resolves once `n` arrivals were counted by `arrive()` (a promise plus the counter). */
export function counter(n) {
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
