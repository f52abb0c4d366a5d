/**
 * The relay of the scale section (scale.mjs) in its own process: `serveRelay` on SQLite in a
 * scratch directory with PROFILE's limits, streams per address and per agent included; only the
 * per-sender publish rate is lifted (the bench publishes from one sender). `config.limits` adds
 * to them. Commands beyond harness.mjs's `cpu`:
 * - `mem`: after two full GCs, `process.memoryUsage()` (RSS, heap, external).
 * - `streams`: streams open on the relay.
 * - `snapshot {file}`: a heap snapshot, to see what each stream holds.
 * With `config.bare`, the baseline instead: node:https + `ws` answering every WebSocket with a
 * challenge frame and every GET with an open `text/event-stream`, nothing checked or stored.
 */
import { createServer } from 'node:https'
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { serveRelay } from '@agentmsg/relay'
import { WebSocketServer } from 'ws'
import { scratch, serveCommands } from './harness.mjs'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')
let relay
let dir

/** The bare baseline: as many idle TLS streams, and only them. */
async function bare(tls) {
  const open = new Set()
  const server = createServer(tls, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': bare\n\n')
    open.add(res)
    res.on('close', () => open.delete(res))
  })
  const wss = new WebSocketServer({ server })
  wss.on('connection', (ws) => ws.send('{"type":"challenge","nonce":"bare"}'))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `https://127.0.0.1:${server.address().port}`,
    handler: { openStreams: () => open.size + wss.clients.size },
    close: () => {
      server.closeAllConnections()
      for (const ws of wss.clients) ws.terminate()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

serveCommands({
  async init({ config }) {
    if (config.bare) {
      relay = await bare(config.tls)
      return { url: relay.url, pid: process.pid }
    }
    dir = scratch('relay-scale-')
    relay = await serveRelay({
      dataDir: dir.dir,
      tls: config.tls,
      limits: { perSender: { perMinute: Infinity }, ...config.limits },
      closeTimeoutMs: 2_000,
    })
    return { url: relay.url, pid: process.pid }
  },
  mem() {
    gc()
    gc()
    return process.memoryUsage()
  },
  streams: () => relay.handler.openStreams(),
  snapshot: ({ file }) => writeHeapSnapshot(file),
  async close() {
    await relay?.close()
    dir?.cleanup()
  },
})
