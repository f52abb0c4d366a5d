/**
 * The process harness of the separate-process benchmarks (issue 12): every server, publisher
 * and subscriber is its own `node` process, as a user runs them, so serialisation, syscalls
 * and the event-loop contention of the other side are paid where they are in production.
 *
 * The parent only orchestrates over IPC (`child_process.fork`): it sends `{id, cmd, ...}` and
 * the child answers `{id, ok}` or `{id, error}` (see {@link serveCommands}). The server's CPU
 * time is read with `process.cpuUsage()` in the server process at the start and the end of the
 * measured window: all its threads (the SQLite writer, the libuv pool) count.
 *
 * Latency crosses processes on `process.hrtime.bigint()`: CLOCK_MONOTONIC, one clock for the
 * whole machine, so publisher send times and subscriber arrival times subtract directly.
 *
 * `BENCH_CPU_PROF=DIR` starts every server process with `--cpu-prof --cpu-prof-dir DIR`.
 */
import { fork } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'

const HERE = new URL('.', import.meta.url)

/** Nanoseconds on the machine-wide monotonic clock, as a Number (µs precision is plenty). */
export const monoNs = () => Number(process.hrtime.bigint())

/** Start `role` (a file in bench/proc) as a child process; resolves when it said ready. */
export async function spawnRole(role, config = {}, { profile = false } = {}) {
  const execArgv = []
  const profDir = process.env.BENCH_CPU_PROF
  if (profile && profDir) execArgv.push('--cpu-prof', '--cpu-prof-dir', profDir)
  const child = fork(new URL(`./${role}.mjs`, HERE), [], {
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  })
  let nextId = 0
  const waiting = new Map()
  let exited = false
  const failAll = (error) => {
    for (const { reject } of waiting.values()) reject(error)
    waiting.clear()
  }
  child.on('message', (msg) => {
    const w = waiting.get(msg.id)
    if (!w) return
    waiting.delete(msg.id)
    if (msg.error) w.reject(new Error(`${role}: ${msg.error}`))
    else w.resolve(msg.ok)
  })
  child.on('exit', (code, signal) => {
    exited = true
    failAll(new Error(`${role} exited (${signal ?? code})`))
  })
  const call = (cmd, args = {}) =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error(`${role} is gone`))
      const id = ++nextId
      waiting.set(id, { resolve, reject })
      child.send({ id, cmd, ...args })
    })
  const info = await call('init', { config })
  return {
    info,
    call,
    pid: child.pid,
    /** Ask the child to close and exit (profiles are written then); kill after `ms`. */
    async stop(ms = 20_000) {
      if (exited) return
      const gone = new Promise((resolve) => child.once('exit', resolve))
      call('stop').catch(() => undefined)
      const timer = setTimeout(() => child.kill('SIGKILL'), ms)
      await gone
      clearTimeout(timer)
    },
  }
}

/**
 * In a child: answer the parent's commands with `handlers[cmd](msg)`; `init` must be one of
 * them, `stop` defaults to exiting once `handlers.close` (if any) resolved.
 */
export function serveCommands(handlers) {
  const reply = (id, body) => process.send?.({ id, ...body })
  process.on('message', async (msg) => {
    try {
      if (msg.cmd === 'cpu') return reply(msg.id, { ok: cpuNow() })
      if (msg.cmd === 'threads') return reply(msg.id, { ok: threadCpu() })
      if (msg.cmd === 'stop') {
        await handlers.close?.()
        reply(msg.id, { ok: true })
        // Let the IPC reply leave, then exit normally so --cpu-prof writes its profile.
        setTimeout(() => process.exit(0), 50)
        return
      }
      const fn = handlers[msg.cmd]
      if (!fn) throw new Error(`unknown command ${msg.cmd}`)
      reply(msg.id, { ok: await fn(msg) })
    } catch (error) {
      reply(msg.id, {
        error: error instanceof Error ? error.stack || error.message : String(error),
      })
    }
  })
  process.on('disconnect', () => process.exit(0))
}

/** CPU ms per thread of this process so far (Linux /proc), by thread name: where CPU goes. */
export function threadCpu() {
  const out = {}
  const tick = 10 // USER_HZ = 100 on Linux: one tick is 10 ms
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const ms = (Number(fields[11]) + Number(fields[12])) * tick
      const key = Number(tid) === process.pid ? 'main' : `${name}#${tid}`
      out[key] = ms
    } catch {
      // the thread ended meanwhile
    }
  }
  return out
}

/** CPU µs (user + system, all threads) of this process so far. */
export function cpuNow() {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** A scratch directory for one run's files; removed by `cleanup()`. */
export function scratch(prefix = 'agentmsg-bench-') {
  const dir = mkdtempSync(join(os.tmpdir(), prefix))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

export function median(values) {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i]
}

export const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

/**
 * `runs` rounds, each `{load, [name]: await cases[name]()}` over every case, the order
 * reversed every other round so a drift in the machine's load hits every case alike.
 */
export async function alternatingRounds(runs, cases, { verbose = false, label = 'round' } = {}) {
  const names = Object.keys(cases)
  const out = []
  for (let i = 0; i < runs; i++) {
    const round = { load: loadAverage() }
    for (const name of i % 2 === 0 ? names : [...names].reverse()) round[name] = await cases[name]()
    out.push(round)
    if (verbose) console.log(label, i, round)
  }
  return out
}

/**
 * A table row (lib.mjs `printTable`) of case `c` beside case `base` over `rounds`, on figure
 * `key` of each: both medians, and the ratio as the median of the rounds' paired ratios.
 * `row` gives `{name, unit, baselineName, target}` and an optional `verdict`.
 */
export function pairedRow(rounds, c, base, key, { name, unit, baselineName, target, verdict }) {
  const m = (f) => median(rounds.map(f))
  return {
    name,
    value: m((r) => r[c][key]),
    unit,
    baseline: m((r) => r[base][key]),
    baselineName,
    ratio: m((r) => r[c][key] / r[base][key]),
    target,
    ...(verdict === undefined ? {} : { verdict }),
  }
}

/** CPU µs per item by thread between two {@link threadCpu} readings, threads that ran only. */
export function threadCpuPer(before, after, n) {
  const out = {}
  for (const [name, ms] of Object.entries(after)) {
    const d = ms - (before[name] ?? 0)
    if (d > 0) out[name] = Math.round((d * 1000) / n)
  }
  return out
}

/**
 * Sorted publish→arrival latencies in ms of the paced sends `sent` ({ids, sentNs}) from index
 * `from` on, matched by id with the subscriber's `got` ({ids, arrivalNs}); and the arrival
 * times by id, to count what was delivered.
 */
export function pushLatencies(sent, got, from) {
  const arrivedAt = new Map(got.ids.map((id, i) => [id, got.arrivalNs[i]]))
  const lat = []
  for (let i = from; i < sent.ids.length; i++) {
    const at = arrivedAt.get(sent.ids[i])
    if (at !== undefined) lat.push((at - sent.sentNs[i]) / 1e6)
  }
  lat.sort((a, b) => a - b)
  return { lat, arrivedAt }
}
