/**
 * The relay of the scale section (scale.mjs) in its own process: `serveRelay` on SQLite in a
 * scratch directory with PROFILE's limits, streams per address and per agent included; only the
 * per-sender publish rate is lifted (the bench publishes from one sender). `config.limits` adds
 * to them. Commands beyond harness.mjs's `cpu`:
 * - `mem`: after two full GCs, `process.memoryUsage()` (RSS, heap, external).
 * - `streams`: streams open on the relay.
 * - `snapshot {file}`: a heap snapshot, to see what each stream holds.
 */
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { serveRelay } from '@agentmsg/relay'
import { scratch, serveCommands } from './harness.mjs'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')
let relay
let dir

serveCommands({
  async init({ config }) {
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
