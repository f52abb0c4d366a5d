/**
 * The load generator in its own process (see harness.mjs): POSTs the bodies of a workload file
 * (workload.mjs) over keep-alive https connections that trust the dev CA, to `config.url` or
 * round-robin to each of `config.urls`.
 * - `closed {from, to, concurrency, maxMs}`: `concurrency` requests in flight until the slice is
 *   sent or `maxMs` passed; → `{n, ms, statuses}`.
 * - `paced {from, to, rate}`: one request every 1/rate s (on a 1 ms timer, catching up in
 *   bursts); → `{ids, sentNs, statuses}` with each send time on the machine's monotonic clock.
 */
import { Agent } from 'node:https'
import { postJson } from '../publish-common.mjs'
import { monoNs, serveCommands } from './harness.mjs'
import { readItems } from './workload.mjs'

let items
let agent
let targets
let turn = 0

/** A failed request counts as status 0. */
const send = (body) => postJson(targets[turn++ % targets.length], agent, body, 0)

function tally(statuses, status) {
  statuses[status] = (statuses[status] ?? 0) + 1
}

async function closed({ from, to, concurrency, maxMs = 60_000 }) {
  const statuses = {}
  let next = from
  const end = performance.now() + maxMs
  const worker = async () => {
    while (next < to && performance.now() < end) tally(statuses, await send(items[next++].body))
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { n: next - from, ms: performance.now() - start, statuses }
}

async function paced({ from, to, rate }) {
  const statuses = {}
  const count = to - from
  const sentNs = new Float64Array(count)
  const ids = items.slice(from, to).map((item) => item.id)
  const sends = []
  await new Promise((resolve) => {
    let i = 0
    const t0 = performance.now()
    const tick = () => {
      const due = Math.min(count, Math.floor(((performance.now() - t0) * rate) / 1000) + 1)
      while (i < due) {
        const item = items[from + i]
        sentNs[i] = monoNs()
        i++
        sends.push(send(item.body).then((s) => tally(statuses, s)))
      }
      if (i < count) setTimeout(tick, 1)
      else resolve()
    }
    tick()
  })
  await Promise.all(sends)
  return { ids, sentNs, statuses }
}

serveCommands({
  init({ config }) {
    items = readItems(config.workload).map((item) => ({
      id: item.id,
      body: Buffer.from(item.body),
    }))
    agent = new Agent({ keepAlive: true, maxSockets: config.maxSockets ?? 64, ca: config.ca })
    // `urls`: several relay nodes, taken in turn request by request (issue 13).
    targets = config.urls ?? [config.url]
    return { items: items.length }
  },
  closed,
  paced,
  close: () => agent?.destroy(),
})
