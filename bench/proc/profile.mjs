/**
 * Profile the relay server process under one load (issue 12): runs the case with the server
 * started as `node --cpu-prof`, then prints the functions with the most self time, and the
 * share of the main thread spent under a few named frames.
 *
 *   node bench/proc/profile.mjs inbox|publish|ws500|sse500|ws1000 [--out DIR] [--top N]
 *
 * The .cpuprofile files stay in DIR (default .tmp/cpu-prof) for Chrome DevTools.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { scratch } from './harness.mjs'
import { agentFromSeed, newSeeds, signedItems, writeItems } from './workload.mjs'

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name)
  return i < 0 ? fallback : process.argv[i + 1]
}
const which = process.argv[2] ?? 'publish'
const out = resolve(arg('--out', '.tmp/cpu-prof'))
const top = Number(arg('--top', 25))
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
process.env.BENCH_CPU_PROF = out

const { cert, key, ca } = await createDevCertificate()
const tls = { cert, key }
if (which === 'inbox') {
  const { benchProcInbox } = await import('./inbox-proc.mjs')
  // One round: the inbox and the bare server are both profiled.
  const { rows } = await benchProcInbox({ runs: 1 })
  console.log(rows.map((r) => `${r.name}: ${r.value.toFixed(0)} ${r.unit}`).join('\n'))
} else if (which === 'publish') {
  const { benchProcRelayPublish } = await import('./relay-proc.mjs')
  // One round: the relay and the bare server are both profiled; the relay's is the larger.
  const { rows } = await benchProcRelayPublish({ tls, ca, runs: 1 })
  console.log(rows.map((r) => `${r.name}: ${r.value.toFixed(0)} ${r.unit}`).join('\n'))
} else {
  const { latencyRun } = await import('./latency-proc.mjs')
  const rate = which.endsWith('1000') ? 1000 : 500
  const mode = which.startsWith('sse') ? 'sse' : 'ws'
  const seed = newSeeds(1)[0]
  const sub = await agentFromSeed(seed)
  const senders = await Promise.all(newSeeds(8).map(agentFromSeed))
  const tmp = scratch()
  const workload = join(tmp.dir, 'w.ndjson')
  writeItems(workload, await signedItems(senders, () => sub.id, 1 + Math.round(4.5 * rate)))
  const r = await latencyRun({ server: { kind: 'relay', tls }, mode, rate, seed, workload, ca })
  console.log(r)
  tmp.cleanup()
}

/** Self time per function, and time under frames whose name matches. */
function summarize(file) {
  const prof = JSON.parse(readFileSync(file, 'utf8'))
  const byId = new Map(prof.nodes.map((n) => [n.id, n]))
  const parent = new Map()
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const dt = new Map()
  prof.samples.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)))
  const total = [...dt.values()].reduce((a, b) => a + b, 0)
  const self = new Map()
  const under = new Map()
  const named = [
    'verify',
    'receive',
    'Request',
    'Response',
    'ReadableStream',
    'postMessage',
    'retrieve',
    'canonicalize',
    'JSON',
    'ack',
  ]
  for (const [id, t] of dt) {
    const n = byId.get(id)
    const f = n.callFrame
    const label = `${f.functionName || '(anon)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber}`
    self.set(label, (self.get(label) ?? 0) + t)
    const seen = new Set()
    for (let p = id; p !== undefined; p = parent.get(p)) {
      const name = byId.get(p).callFrame.functionName
      for (const k of named)
        if (name.includes(k) && !seen.has(k)) {
          seen.add(k)
          under.set(k, (under.get(k) ?? 0) + t)
        }
    }
  }
  const idle = [...self].filter(([l]) => l.startsWith('(idle)')).reduce((a, [, t]) => a + t, 0)
  console.log(
    `\n### ${file}: ${(total / 1e6).toFixed(2)} s sampled, ${((100 * idle) / total).toFixed(0)}% idle`,
  )
  for (const [label, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${label}`)
  console.log('under frames named (inclusive, % of samples):')
  for (const [k, t] of [...under].sort((a, b) => b[1] - a[1]))
    console.log(`  ${k}: ${((100 * t) / total).toFixed(1)}%`)
}

const files = readdirSync(out).filter((f) => f.endsWith('.cpuprofile'))
for (const f of files) summarize(join(out, f))
